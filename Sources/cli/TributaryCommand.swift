import ArgumentParser

/// `tributary`: the client of a Tributary coordinator.
@main
struct TributaryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tributary",
        abstract:
            "Push jobs to a Tributary coordinator, schedule periodic ones, follow its change feed, fetch, count, watch, update and delete its objects, show its status and jobs, or run a demo.",
        subcommands: [
            PushCommand.self, SubscribeCommand.self, SubscribersCommand.self, FetchCommand.self, CountCommand.self,
            UpdateCommand.self, DeleteCommand.self, WatchCommand.self,
            StatusCommand.self, JobsCommand.self, QueuesCommand.self, SchedulesCommand.self, BackupCommand.self,
            RelayCommand.self,
            KeysCommand.self, GenerateCommand.self,
            DemoCommand.self,
        ])
}
