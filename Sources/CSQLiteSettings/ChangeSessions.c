// SQLite's session extension, for replication: Debian's libsqlite3 is built with it (and the pre-update hook it
// needs), but sqlite3.h declares it only when these are defined.
#define SQLITE_ENABLE_SESSION 1
#define SQLITE_ENABLE_PREUPDATE_HOOK 1
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "SQLiteSettings.h"

struct tributary_session {
    sqlite3_session *session;
};

// Derived tables (the inverse index, kept by triggers that run wherever rows are written) and the replication
// state itself (written beside each record, not in it) are not recorded.
static int tributary_session_table_filter(void *context, const char *table) {
    (void)context;
    return strncmp(table, "tributary_inverse", 17) != 0 && strncmp(table, "tributary_replication", 21) != 0
        && strncmp(table, "sqlite_", 7) != 0;
}

int tributary_session_create(sqlite3 *db, tributary_session **out) {
    *out = NULL;
    tributary_session *made = sqlite3_malloc(sizeof(tributary_session));
    if (made == NULL) return SQLITE_NOMEM;
    int rc = sqlite3session_create(db, "main", &made->session);
    if (rc != SQLITE_OK) {
        sqlite3_free(made);
        return rc;
    }
    sqlite3session_table_filter(made->session, tributary_session_table_filter, NULL);
    rc = sqlite3session_attach(made->session, NULL);
    if (rc != SQLITE_OK) {
        sqlite3session_delete(made->session);
        sqlite3_free(made);
        return rc;
    }
    *out = made;
    return SQLITE_OK;
}

int tributary_session_changeset(tributary_session *session, int *size, void **bytes) {
    return sqlite3session_changeset(session->session, size, bytes);
}

int tributary_session_is_empty(tributary_session *session) { return sqlite3session_isempty(session->session); }

void tributary_session_delete(tributary_session *session) {
    if (session == NULL) return;
    sqlite3session_delete(session->session);
    sqlite3_free(session);
}

struct tributary_apply_conflict {
    char *description;
    size_t capacity;
};

static int tributary_apply_on_conflict(void *context, int conflict, sqlite3_changeset_iter *iterator) {
    struct tributary_apply_conflict *found = context;
    const char *table = NULL;
    int columns = 0, operation = 0, indirect = 0;
    if (conflict != SQLITE_CHANGESET_FOREIGN_KEY) sqlite3changeset_op(iterator, &table, &columns, &operation, &indirect);
    const char *kind = conflict == SQLITE_CHANGESET_DATA         ? "a row with other values"
                       : conflict == SQLITE_CHANGESET_NOTFOUND   ? "no such row"
                       : conflict == SQLITE_CHANGESET_CONFLICT   ? "the row exists already"
                       : conflict == SQLITE_CHANGESET_CONSTRAINT ? "a constraint failed"
                                                                 : "a foreign key failed";
    const char *what = operation == SQLITE_INSERT ? "insert" : operation == SQLITE_DELETE ? "delete" : "update";
    // A foreign-key conflict comes with no change to name.
    snprintf(found->description, found->capacity, "%s of %s: %s", what, table ? table : "?", kind);
    return SQLITE_CHANGESET_ABORT;
}

int tributary_changeset_apply(sqlite3 *db, int size, const void *bytes, char *conflict, size_t capacity) {
    struct tributary_apply_conflict found = {conflict, capacity};
    if (capacity > 0) conflict[0] = 0;
    return sqlite3changeset_apply(
        db, size, (void *)bytes, NULL, tributary_apply_on_conflict, &found);
}
