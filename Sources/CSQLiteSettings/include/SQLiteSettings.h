#ifndef TRIBUTARY_SQLITE_SETTINGS_H
#define TRIBUTARY_SQLITE_SETTINGS_H

/// Turns off SQLite's memory statistics for the whole process (`SQLITE_CONFIG_MEMSTATUS`): each allocation and
/// free then skips a global mutex. Call before SQLite is first used; afterwards it changes nothing.
/// Returns SQLite's result code (SQLITE_MISUSE once SQLite is initialized).
int tributary_sqlite_disable_memory_statistics(void);

#endif
