#!/usr/bin/env python3
"""The import benchmark's peer: what a user would write instead of using Tributary.

One process, the standard library only (json + sqlite3): reads the benchmark's NDJSON pull requests and imports
them into the same logical model (INTEGER PRIMARY KEY tables, the same unique and relationship indexes), finding
or creating each author and reviewer by login through a dict, in 1,000-row transactions, WAL with
synchronous=NORMAL. Prints the rows per second, timed from opening the input to the last commit.

usage: peer-import.py INPUT.ndjson STORE.sqlite
"""
import datetime
import json
import sqlite3
import sys
import time

ROWS_PER_TRANSACTION = 1000


def main(input_path, store_path):
    db = sqlite3.connect(store_path, isolation_level=None)
    db.executescript(
        """
        PRAGMA journal_mode = WAL;
        PRAGMA synchronous = NORMAL;
        CREATE TABLE User (id INTEGER PRIMARY KEY, login TEXT NOT NULL UNIQUE, name TEXT);
        CREATE TABLE PullRequest (id INTEGER PRIMARY KEY, number INTEGER NOT NULL UNIQUE, title TEXT NOT NULL,
            merged INTEGER NOT NULL, additions INTEGER NOT NULL, score REAL, createdAt REAL NOT NULL,
            author INTEGER REFERENCES User(id));
        CREATE INDEX PullRequest_by_author ON PullRequest(author);
        CREATE TABLE PullRequest_reviewers (source INTEGER NOT NULL, destination INTEGER NOT NULL,
            PRIMARY KEY (source, destination)) WITHOUT ROWID;
        CREATE INDEX PullRequest_reviewers_by_destination ON PullRequest_reviewers(destination);
        """
    )
    started = time.perf_counter()
    users = {}

    def user(login):
        found = users.get(login)
        if found is None:
            found = db.execute("INSERT INTO User (login) VALUES (?)", (login,)).lastrowid
            users[login] = found
        return found

    rows = 0
    db.execute("BEGIN")
    with open(input_path, "rb") as lines:
        for line in lines:
            row = json.loads(line)
            created = datetime.datetime.fromisoformat(row["createdAt"].replace("Z", "+00:00")).timestamp()
            author = user(row["author"]["login"])
            pull_request = db.execute(
                "INSERT INTO PullRequest (number, title, merged, additions, score, createdAt, author) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (row["number"], row["title"], row["merged"], row["additions"], row["score"], created, author),
            ).lastrowid
            for reviewer in row["reviewers"]:
                db.execute(
                    "INSERT OR IGNORE INTO PullRequest_reviewers (source, destination) VALUES (?, ?)",
                    (pull_request, user(reviewer["login"])),
                )
            rows += 1
            if rows % ROWS_PER_TRANSACTION == 0:
                db.execute("COMMIT")
                db.execute("BEGIN")
    db.execute("COMMIT")
    elapsed = time.perf_counter() - started
    db.close()
    print(f"{rows / elapsed:.1f}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    main(sys.argv[1], sys.argv[2])
