import Foundation
import TributaryCore
import TributaryProtocol

/// A status (`StatusRequest`, `/api/status`, `/metrics`, the dashboard) read from the store on a reader and from the
/// router's last published state (``RouterSnapshot``): workers, the local pool, running jobs, counts by state,
/// queues, limits and the feed's positions.
struct StatusReader: Sendable {
    let store: RootStore
    let limits: RunLimits
    let snapshot: RouterSnapshot

    func reply() async throws -> Tributary_V1_StatusReply {
        let router = snapshot.current
        let overview = try await store.jobs.overview()
        let running = try await store.jobs.runningJobs()
        let oldestHistorySeq = try await store.feed.oldestKeptSequenceNumber()
        let runningCounts =
            limits.byKind.isEmpty && limits.byQueue.isEmpty ? ([:], [:]) : try await store.jobs.runningCounts()
        var perArgument: [Tributary_V1_RunLimitInfo] = []
        for limit in limits.perArgument {
            let busiest = limit.rate == nil ? try await store.jobs.busiestValue(of: limit) : 0
            perArgument.append(
                .with {
                    $0.target = limit.name
                    $0.limit = UInt32(limit.count)
                    $0.running = UInt64(busiest)
                    $0.periodSeconds = limit.rate?.seconds ?? 0
                })
        }
        let now = ContinuousClock.now
        let reply = Tributary_V1_StatusReply.with { reply in
            reply.limits =
                limits.byKind.sorted { $0.key < $1.key }.map { kind, limit in
                    Tributary_V1_RunLimitInfo.with {
                        $0.target = "kind:\(kind)"
                        $0.limit = UInt32(limit)
                        $0.running = UInt64(runningCounts.0[kind] ?? 0)
                    }
                }
                + limits.byQueue.sorted { $0.key < $1.key }.map { queue, limit in
                    Tributary_V1_RunLimitInfo.with {
                        $0.target = "queue:\(queue)"
                        $0.limit = UInt32(limit)
                        $0.running = UInt64(runningCounts.1[queue] ?? 0)
                    }
                }
                + limits.rateByKind.sorted { $0.key < $1.key }.map { kind, rate in
                    Tributary_V1_RunLimitInfo.with {
                        $0.target = "kind:\(kind)"
                        $0.limit = UInt32(rate.count)
                        $0.periodSeconds = rate.seconds
                    }
                }
                + limits.rateByQueue.sorted { $0.key < $1.key }.map { queue, rate in
                    Tributary_V1_RunLimitInfo.with {
                        $0.target = "queue:\(queue)"
                        $0.limit = UInt32(rate.count)
                        $0.periodSeconds = rate.seconds
                    }
                } + perArgument
            reply.queues = overview.queues.map(\.status.wire)
            reply.jobs = overview.counts.wire
            reply.lastSeq = overview.lastSeq
            reply.oldestHistorySeq = oldestHistorySeq
            reply.storePath = store.path
            if let fault = store.writer.writability.fault(at: now) {
                reply.storeUnwritable = fault.reason
                reply.storeUnwritableSeconds = fault.since.duration(to: now).seconds
            }
            reply.pool = (router.supervisor?.processes ?? []).map(\.wire)
            reply.running = running.map(\.wire)
            reply.workers = router.workers.values.sorted {
                $0.id.count == $1.id.count ? $0.id < $1.id : $0.id.count < $1.id.count
            }
            .map { worker in
                Tributary_V1_WorkerInfo.with {
                    $0.workerID = worker.id
                    $0.name = worker.name
                    $0.pid = worker.pid
                    $0.state = worker.state
                    let silence = now - worker.lastSeen
                    $0.secondsSinceHeartbeat =
                        silence.seconds
                    $0.currentJobID = UInt64(worker.jobs.keys.min() ?? 0)
                    $0.freeSlots = worker.credit
                }
            }
        }
        return reply
    }
}
