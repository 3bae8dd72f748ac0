import CSQLiteSettings

/// SQLite settings that hold for the whole process, made once before its first connection.
///
/// Memory statistics are off: with them on, every allocation and free SQLite makes takes a global mutex, which the
/// writer would pay on every row it writes. Nothing here reads them (`sqlite3_memory_used`, a soft heap limit).
public enum SQLiteProcessSettings {
    /// Makes the settings, once; a process that already used SQLite keeps SQLite's defaults.
    /// - Returns: whether memory statistics are off (false when SQLite was used before the first call).
    @discardableResult
    public static func apply() -> Bool {
        memoryStatisticsOff
    }

    private static let memoryStatisticsOff: Bool = tributary_sqlite_disable_memory_statistics() == 0
}
