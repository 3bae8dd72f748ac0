#if canImport(Glibc)
    import Glibc
#endif

/// The coordinator's malloc setting, made once per process (by ``RootStore/open(path:model:)``): a fixed mmap
/// threshold of 1 MiB.
///
/// glibc starts with a 128 KiB threshold and raises it (up to 32 MiB) each time a block above it is freed, so after
/// the first commits the writer's large per-commit buffers (a commit's feed parts and history record, the merge's
/// tables) come from the heap arenas of the threads that allocate them, where they fragment and stay resident.
/// A fixed threshold keeps every block above it in its own mapping, returned to the system when freed. 1 MiB is
/// above the many mid-sized blocks a commit makes, which would each cost a system call to map and one to unmap, and
/// below the large buffers that fragment (see docs/benchmarks.md, 'Memory (stalled subscriber)').
public enum ProcessMemorySettings {
    /// Blocks of at least this many bytes are mapped on their own.
    public static let mmapThreshold: Int32 = 1024 * 1024

    /// Makes the setting, once. Returns whether it was made (false where malloc is not glibc's).
    @discardableResult
    public static func apply() -> Bool { applied }

    private static let applied: Bool = {
        #if canImport(Glibc)
            // mallopt and M_MMAP_THRESHOLD are in <malloc.h>, which the Glibc module does not export: the function
            // is looked up in the process (glibc's own), the constant is glibc's value.
            typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
            guard let process = dlopen(nil, RTLD_NOW), let symbol = dlsym(process, "mallopt") else { return false }
            let mmapThresholdParameter: Int32 = -3
            return unsafeBitCast(symbol, to: Mallopt.self)(mmapThresholdParameter, mmapThreshold) == 1
        #else
            return false
        #endif
    }()
}
