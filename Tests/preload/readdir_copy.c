// Preloaded into the tests (make test): Foundation's Process.run() on Linux, in Swift 6.3.1, reads each entry of
// /proc/self/fd as a whole `struct dirent` (280 bytes) where readdir(3) returns records of `d_reclen` bytes (24 for
// a descriptor's name), so the copy of an entry at the end of glibc's 32 KiB directory buffer can read past a mapping
// and crash the process (swift-corelibs-foundation#5472, fixed after 6.3.1). The test process holds ~1,400
// descriptors at times, which fills that buffer. This readdir returns each entry copied into a whole struct dirent
// of the calling thread, valid until that thread's next readdir: the copy then stays inside it.
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

struct dirent *readdir(DIR *directory) {
    static struct dirent *(*next)(DIR *) = NULL;
    if (next == NULL) next = (struct dirent * (*)(DIR *)) dlsym(RTLD_NEXT, "readdir");
    struct dirent *entry = next(directory);
    if (entry == NULL) return NULL;
    static __thread struct dirent copy;
    size_t size = entry->d_reclen < sizeof copy ? entry->d_reclen : sizeof copy;
    memset(&copy, 0, sizeof copy);
    memcpy(&copy, entry, size);
    return &copy;
}
