#if canImport(Glibc)
    import Glibc
#endif

/// The coordinator's malloc settings, made once per process (by `open(path:model:)`): a fixed mmap
/// threshold of 1 MiB, and a trim threshold of 8 MiB.
///
/// glibc starts with a 128 KiB threshold and raises it (up to 32 MiB) each time a block above it is freed, so after
/// the first commits the writer's large per-commit buffers (a commit's feed parts and history record, the merge's
/// tables) come from the heap arenas of the threads that allocate them, where they fragment and stay resident.
/// A fixed threshold keeps every block above it in its own mapping, returned to the system when freed. 1 MiB is
/// above the many mid-sized blocks a commit makes, which would each cost a system call to map and one to unmap, and
/// below the large buffers that fragment (see docs/benchmarks.md, 'Memory (stalled subscriber)').
///
/// Fixing it also fixes the trim threshold at glibc's starting 128 KiB: a thread's heap then gives its free top back
/// (`madvise`) whenever it passes that, and the next commit touches those pages again, a page fault each: under small
/// commits, thousands a second. Below ``trimThreshold`` the free top is kept for the next commit.
public enum ProcessMemorySettings {
    /// Blocks of at least this many bytes are mapped on their own.
    public static let mmapThreshold: Int32 = 1024 * 1024
    /// Free memory at the top of a heap kept for later blocks, rather than given back to the system.
    public static let trimThreshold: Int32 = 8 * 1024 * 1024

    /// Makes the settings, once. Returns whether both were made (false where malloc is not glibc's).
    @discardableResult
    public static func apply() -> Bool { applied }

    private static let applied: Bool = {
        #if canImport(Glibc)
            // mallopt and its M_ constants are in <malloc.h>, which the Glibc module does not export: the function
            // is looked up in the process (glibc's own), the constants are glibc's values.
            typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
            guard let process = dlopen(nil, RTLD_NOW), let symbol = dlsym(process, "mallopt") else { return false }
            let mallopt = unsafeBitCast(symbol, to: Mallopt.self)
            let (trimThresholdParameter, mmapThresholdParameter): (Int32, Int32) = (-1, -3)
            // Both tried, whatever the first answers.
            let mapped = mallopt(mmapThresholdParameter, mmapThreshold) == 1
            let trimmed = mallopt(trimThresholdParameter, trimThreshold) == 1
            return mapped && trimmed
        #else
            return false
        #endif
    }()
}
