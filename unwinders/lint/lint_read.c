/* lint over memory or a memory-mapped file: the walk's state is allocated
 * here, and lint_file releases mapped pages behind the walk. */
#include "unwinders/lint/lint_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "juerr.h"

#define RELEASE_CHUNK ((size_t)8 << 20)    /* lint_file drops mapped pages every 8 MiB */

#define POPULATE_CHUNK ((size_t)2 << 20)

void lint_release_behind(struct lint_ctx *c, size_t off)
{
#ifdef MADV_POPULATE_READ
	/* map the pages ahead of the walk by one call per 2 MiB instead of a page
	 * fault per few pages (faults are dear in a VM); a hint: an older kernel's
	 * EINVAL, or any error, leaves the faults to do it */
	if (c->release && off + POPULATE_CHUNK / 2 > c->populated && c->populated < c->size) {
		size_t from = c->populated > off ? c->populated : off & ~(size_t)4095;
		size_t to = from + POPULATE_CHUNK < c->size ? from + POPULATE_CHUNK : c->size;
		if (madvise((void *)(uintptr_t)(c->data + from), to - from, MADV_POPULATE_READ))
			c->populated = c->size;   /* not supported: stop asking */
		else
			c->populated = to;
	}
#endif
	if (!c->release || off - c->released < RELEASE_CHUNK)
		return;
	/* stay a large folio (up to 2 MiB) behind: a fault near the walk maps the
	 * whole folio again, and what it maps below `released` would stay */
	size_t lag = (size_t)2 << 20;
	size_t to = off > 2 * lag ? (off - lag) & ~(lag - 1) : 0;
	if (to > c->released) {
		/* clean file pages: dropping them only costs a refault if read again */
		madvise((void *)(uintptr_t)(c->data + c->released), to - c->released, MADV_DONTNEED);
		c->released = to;
	}
}

static int lint_run(const uint8_t *data, size_t size, const struct lint_opts *o, lint_report_fn cb,
		    void *arg, struct lint_summary *sum, bool release)
{
	static const struct lint_opts defo = { PV_CURRENT, NULL, 0, 0, NULL };
	struct lint_ctx *c = calloc(1, sizeof(*c));
	memset(sum, 0, sizeof(*sum));
	sum->bytes = size;
	if (!c)
		return -ENOMEM;
	c->o = o ? o : &defo;
	c->prof = c->o->profile;
	c->cb = cb;
	c->arg = arg;
	c->sum = sum;
	c->data = data;
	c->size = size;
	c->release = release;
	int rc = -ENOMEM;
	c->ncodes = 256;
	c->codes = calloc(c->ncodes, sizeof(*c->codes));
	c->rows = calloc(LINT_MAX_ROWS, sizeof(*c->rows));
	c->rcache = calloc(LINT_RC_SLOTS, sizeof(*c->rcache));   /* NULL: every program is run */
	const char *memo = getenv("JU_LINT_MEMO");
	c->cm_off = memo && !strcmp(memo, "0");
	if (c->codes && c->rows && !lint_it_init(&c->maps, LINT_MAX_MAPS) && !lint_it_init(&c->index, LINT_MAX_INDEX))
		rc = lint_walk_ctx(c);
	lint_it_fini(&c->maps);
	lint_it_fini(&c->index);
	free(c->codes);
	free(c->rows);
	free(c->rcache);
	free(c->cmemo);
	free(c->fp_memo);
	free(c);
	return rc;
}

int lint_mem(const uint8_t *data, size_t size, const struct lint_opts *o,
	     lint_report_fn cb, void *arg, struct lint_summary *sum)
{
	return lint_run(data, size, o, cb, arg, sum, false);
}

int lint_file(const char *path, const struct lint_opts *o, lint_report_fn cb, void *arg,
	      struct lint_summary *sum, struct ju_err *err)
{
	memset(sum, 0, sizeof(*sum));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		ju_errf(err, EINVAL, 0, "%s: offset 0x0: cannot open: %s", path, strerror(e));
		sum->unreadable = true;
		return -e;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		ju_errf(err, EINVAL, 0, "%s: offset 0x0: not a regular file", path);
		close(fd);
		sum->unreadable = true;
		return -EINVAL;
	}
	size_t size = (size_t)st.st_size;
	const uint8_t *data = NULL;
	void *m = NULL;
	if (size) {
		m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED) {
			int e = errno;
			ju_errf(err, EINVAL, 0, "%s: offset 0x0: cannot mmap: %s", path, strerror(e));
			close(fd);
			sum->unreadable = true;
			return -e;
		}
		madvise(m, size, MADV_SEQUENTIAL);
		data = m;
	}
	close(fd);
	int rc = lint_run(data, size, o, cb, arg, sum, true);
	if (m)
		munmap(m, size);
	if (rc == -ENOMEM) {
		ju_errf(err, EINVAL, 0, "%s: out of memory", path);
		return rc;
	}
	if (rc < 0)
		ju_errf(err, EINVAL, 0, "%s: offset 0x%" PRIx64 ": %s", path, sum->fatal_offset, sum->fatal);
	return rc < 0 ? rc : 0;
}
