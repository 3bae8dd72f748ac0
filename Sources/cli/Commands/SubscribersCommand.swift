import ArgumentParser
import Foundation
import TributaryClient
import TributaryCommandSupport
import TributaryCore

/// `tributary subscribers`: the durable feed subscribers.
struct SubscribersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "subscribers",
        abstract: "List or delete durable feed subscribers (history after their positions is kept).",
        subcommands: [SubscribersListCommand.self, SubscribersDeleteCommand.self],
        defaultSubcommand: SubscribersListCommand.self)
}

/// `tributary subscribers list`.
struct SubscribersListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List durable subscribers: name, position, when it last moved.")

    @OptionGroup var jobs: JobsEndpointOption

    func run() async throws {
        let subscribers = try await JobClient.with(endpoint: jobs.endpoint, curve: try jobs.curveKeys()) {
            try await $0.subscribers()
        }
        for subscriber in subscribers { Terminal.line(Self.line(subscriber)) }
    }

    /// `NAME  seq N  updated TIME`.
    static func line(_ subscriber: DurableSubscriber) -> String {
        let updated = subscriber.updatedAt.formatted(.iso8601)
        return "\(subscriber.name)  seq \(subscriber.position)  updated \(updated)"
    }
}

/// `tributary subscribers delete NAME`.
struct SubscribersDeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Forget a durable subscriber, so it no longer holds history back.")

    @Argument(help: "The subscriber's name.")
    var name: String

    @OptionGroup var jobs: JobsEndpointOption

    func run() async throws {
        let subscriber = try await JobClient.with(endpoint: jobs.endpoint, curve: try jobs.curveKeys()) {
            try await $0.deleteSubscriber(name: name)
        }
        Terminal.line("deleted " + SubscribersListCommand.line(subscriber))
    }
}
