import Foundation
import TributaryCore
import TributaryDemo
import TributaryProtocol

/// The seed corpus of the fuzz targets: valid inputs of each kind, from which libFuzzer mutates. Written by
/// `tributary-fuzz seeds Fuzz/corpus` and committed.
public enum FuzzSeeds {
    /// Writes `DIR/<target>/seed-N` files.
    public static func write(into directory: String) throws {
        for (target, seeds) in try all() {
            let folder = URL(fileURLWithPath: directory).appendingPathComponent(target.rawValue)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for (index, seed) in seeds.enumerated() {
                try seed.write(to: folder.appendingPathComponent("seed-\(index)"))
            }
        }
    }

    static func all() throws -> [(FuzzTarget, [Data])] {
        let changeSets = try changeSetSeeds()
        return [
            (.wire, try wireSeeds(changeSets)),
            (.changeSet, try changeSets.map { try $0.serializedData() }),
            (.model, [Data(DemoData.modelJSON.utf8), Data(deleteRuleModel.utf8)]),
            (
                .importRows,
                [DemoData.pullRequests(count: 5, users: 3), Data(#"{"number": 1, "title": "\u00e9"}"#.utf8)]
            ),
            (.predicate, predicateSeeds.map { Data($0.utf8) }),
        ]
    }

    private static let deleteRuleModel = """
        {"entities": [{"name": "Folder", "attributes": [{"name": "name", "type": "string"}],
          "relationships": [{"name": "files", "destination": "File", "toMany": true, "deleteRule": "cascade"}]},
         {"name": "File", "attributes": [{"name": "path", "type": "string", "optional": true}]}]}
        """

    private static let predicateSeeds = [
        "number > %d AND title BEGINSWITH[c] %@", "merged == NO OR (additions >= 10 AND score != nil)",
        "title IN {'a', \"b\"}", "NOT (title CONTAINS 'x') AND title LIKE 'a*?'", "%K == %@", "TRUEPREDICATE",
        "createdAt > CAST(0, \"NSDate\")", "author == nil",
    ]

    /// Inserts, an update with versions and originals (store trump), and a delete, of the demo model.
    private static func changeSetSeeds() throws -> [Tributary_V1_ChangeSet] {
        let context = ObjectContext(model: DemoData.model, parent: nil, name: "seeds")
        return try context.performAndWait {
            let user = try context.findOrCreate("User", matching: ["login": .string("octocat")])
            let pr = try context.insert("PullRequest")
            try pr.setValue(.int(1), for: "number")
            try pr.setValue(.string("Fix"), for: "title")
            try pr.setValue(.bool(false), for: "merged")
            try pr.setValue(.int(3), for: "additions")
            try pr.setValue(.date(Date(timeIntervalSince1970: 1_700_000_000)), for: "createdAt")
            try pr.setDestination(user, for: "author")
            try pr.setDestinations([user], for: "reviewers")
            let inserts = context.takePendingChanges().changeSet
            pr.version = 7
            try pr.setValue(.string("Fixed"), for: "title")
            context.mergePolicy = .storeTrump
            let update = context.takePendingChanges().changeSet
            context.delete(user)
            let delete = context.takePendingChanges().changeSet
            return [inserts, update, delete]
        }
    }

    private static func wireSeeds(_ changeSets: [Tributary_V1_ChangeSet]) throws -> [Data] {
        var fetch = Tributary_V1_FetchRequest()
        fetch.entity = "PullRequest"
        fetch.predicate = try FetchPredicate(format: "additions > %d", 3).wire
        fetch.sort = [FetchSort("number").wire]
        let bodies: [Tributary_V1_Envelope.OneOf_Body] = [
            .statusRequest(.init()),
            .pushJobs(
                .with { $0.jobs = [ImportJob.spec(entity: "PullRequest", payload: Data("{}\n".utf8), rows: 1).wire] }),
            .fetchRequest(fetch),
            .saveChanges(.with { $0.changes = changeSets[0] }),
            .historyRequest(.with { $0.afterSeq = 1 }),
        ]
        return bodies.map { body in
            var joined = Data()
            for (index, frame) in Wire.frames(Wire.envelope(1, body)).enumerated() {
                if index > 0 { joined.append(0xFF) }
                joined.append(frame)
            }
            return joined
        }
    }
}
