import ZeroMQ

/// The process's ZeroMQ runtime: one context shared by every connection, feed and server socket of the process
/// (ZeroMQ's advice), and its orderly end.
public enum MessagingRuntime {
    /// Ends the process's ZeroMQ context at the end of `main`, after the services stopped: what closed sockets
    /// still hold (a worker's goodbye, a coordinator's last replies) is sent within each socket's linger, and any
    /// socket still open is closed. Call it once, last; a connection made afterwards gets a new context.
    public static func shutDown() async {
        await ZMQContext.terminateShared()
    }
}
