import Foundation
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryProtocol

@Suite("Feed subscriptions: what the XPUB reports decides what is built")
struct FeedSubscriptionsTests {
    let jobs = Data(Wire.jobsTopic.utf8)
    let user = Data("User".utf8)

    func subscribe(_ topic: String) -> [Data] { [Data([1]) + Data(topic.utf8)] }
    func unsubscribe(_ topic: String) -> [Data] { [Data([0]) + Data(topic.utf8)] }

    @Test("nothing is wanted until someone subscribes; a subscription matches the topics it is a prefix of")
    func prefixes() {
        let subscriptions = FeedSubscriptions()
        #expect(!subscriptions.wants(jobs) && !subscriptions.wants(user))
        subscriptions.record(subscribe("$j"))
        #expect(subscriptions.wants(jobs) && !subscriptions.wants(user))
        subscriptions.record(subscribe("Users"))
        #expect(!subscriptions.wants(user), "a subscription longer than the topic does not match it")
        subscriptions.record(subscribe(""))
        #expect(subscriptions.wants(user), "the empty subscription matches every topic")
    }

    @Test("an unsubscription (the last subscriber left) takes the topic away; other messages are ignored")
    func unsubscriptions() {
        let subscriptions = FeedSubscriptions()
        subscriptions.record(subscribe(Wire.jobsTopic))
        subscriptions.record([Data([7]) + jobs])
        subscriptions.record([Data()])
        subscriptions.record([Data([1]) + user, Data("more".utf8)])
        #expect(subscriptions.wants(jobs) && !subscriptions.wants(user))
        subscriptions.record(unsubscribe(Wire.jobsTopic))
        #expect(!subscriptions.wants(jobs))
    }

    @Test("past the most topics it follows, everything is wanted (ZeroMQ filters, as without it)")
    func overflow() {
        let subscriptions = FeedSubscriptions()
        for index in 0..<FeedSubscriptions.maximumTopics { subscriptions.record(subscribe("Entity\(index)")) }
        #expect(!subscriptions.wants(user))
        subscriptions.record(subscribe("one more"))
        #expect(subscriptions.wants(user) && subscriptions.wants(jobs))
    }
}
