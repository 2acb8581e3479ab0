/*-------------------------------------------------------------------------
 *
 * state_cache.c
 *	  A per-backend cache of the matrix blocks (Cholesky factors of H and
 *	  K') of recently used model states.
 *
 * A single-row removal costs O(p^2) arithmetic, about 2 ms at p = 785, but
 * reading the 5 MB of blocks through SPI costs several times that.  So a
 * backend keeps the matrices of the state versions it has read or written,
 * with the tids of their block rows, keyed by the version of the model's
 * unlearn.model_state row that was written together with them, its (xmin,
 * ctid), and by the file of unlearn.model_blocks (VACUUM FULL and CLUSTER
 * move rows to a new file).  Every write of the blocks also updates that
 * row, in the same (sub)transaction, so
 *
 *	 - a version visible to a snapshot identifies the blocks visible to it;
 *	 - a rolled-back write leaves the older version (and key) visible, and
 *	   the older matrices are still in the cache or are read again;
 *	 - another backend's write is a new version with another xmin: a miss.
 *
 * The versions of one model (xmin, ctid) never repeat within a backend's
 * lifetime: a tuple version is removed only once its inserting (sub)
 * transaction aborted or it is dead to every snapshot, and a new version in
 * its slot has the xid of a later (sub)transaction.
 *
 * Entries are immutable.  A statement gets a private copy to modify (see
 * state_cache_buffer); after the blocks are written the copy becomes an
 * entry with the new key, so a committed statement costs one memcpy and no
 * read.  A crash restarts every backend and so empties every cache along
 * with the unlogged blocks.  The cache holds at most unlearn.state_cache
 * kilobytes, least recently used entries first out, and at most two
 * versions of a model (the one a statement started from and the one it
 * wrote, so that BEGIN ... ROLLBACK loops hit too).
 *
 *-------------------------------------------------------------------------
 */
#include "unlearn.h"

#include <limits.h>

#include "lib/ilist.h"
#include "utils/guc.h"
#include "utils/memutils.h"

typedef struct CacheEntry
{
	dlist_node	node;			/* in lru, most recent first */
	char	   *model;
	StateVersion version;
	Size		ndoubles;
	double	   *matrices;
	ItemPointerData *tids;		/* of the block rows, or NULL */
	int			ntids;
} CacheEntry;

/* a statement's private buffer, freed with the statement unless adopted */
typedef struct PendingBuffer
{
	dlist_node	node;			/* in pending */
	MemoryContextCallback callback;
	double	   *matrices;
	bool		adopted;
} PendingBuffer;

static dlist_head lru = DLIST_STATIC_INIT(lru);
static dlist_head pending_buffers = DLIST_STATIC_INIT(pending_buffers);
static Size cached_bytes = 0;
int			unlearn_state_cache_kb = 65536;

/*
 * Matrices live in TopMemoryContext, aligned to BLAS_ALIGN bytes (so a
 * cached and a read copy of one state give bit-identical results, see
 * unlearn.h), with room in front for the start of the allocation and a
 * bytea header, so that catalog.c can pass any prefix of them to SQL
 * without a copy.
 */
static double *
alloc_matrices(Size n)
{
	char	   *base = MemoryContextAllocHuge(TopMemoryContext,
											  sizeof(double) * n + 2 * BLAS_ALIGN);
	char	   *aligned = (char *) TYPEALIGN(BLAS_ALIGN, base + sizeof(char *) + VARHDRSZ);

	memcpy(aligned - VARHDRSZ - sizeof(char *), &base, sizeof(char *));
	return (double *) aligned;
}

static void
free_matrices(double *matrices)
{
	char	   *base;

	memcpy(&base, (char *) matrices - VARHDRSZ - sizeof(char *), sizeof(char *));
	pfree(base);
}

static void
free_entry(CacheEntry *e)
{
	dlist_delete(&e->node);
	cached_bytes -= e->ndoubles * sizeof(double);
	free_matrices(e->matrices);
	if (e->tids)
		pfree(e->tids);
	pfree(e->model);
	pfree(e);
}

/* drop least recently used entries until `extra` more bytes fit */
static void
make_room(Size extra)
{
	Size		limit = (Size) unlearn_state_cache_kb * 1024;

	while (!dlist_is_empty(&lru) && cached_bytes + extra > limit)
		free_entry(dlist_container(CacheEntry, node, dlist_tail_node(&lru)));
}

static void
release_pending(void *arg)
{
	PendingBuffer *pending = (PendingBuffer *) arg;

	dlist_delete(&pending->node);
	if (!pending->adopted)
		free_matrices(pending->matrices);
}

/*
 * A buffer of n doubles for a statement to fill or modify, in long-lived
 * memory but freed when the current memory context goes (error or not),
 * unless state_cache_store adopted it first.  The VARHDRSZ bytes before it
 * are free for a bytea header.
 */
double *
state_cache_buffer(Size n)
{
	PendingBuffer *pending = palloc0(sizeof(PendingBuffer));

	pending->matrices = alloc_matrices(n);
	pending->callback.func = release_pending;
	pending->callback.arg = pending;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &pending->callback);
	dlist_push_head(&pending_buffers, &pending->node);
	return pending->matrices;
}

static PendingBuffer *
find_pending(double *matrices)
{
	dlist_iter	it;

	dlist_foreach(it, &pending_buffers)
	{
		PendingBuffer *pending = dlist_container(PendingBuffer, node, it.cur);

		if (pending->matrices == matrices)
			return pending;
	}
	return NULL;
}

/*
 * On a hit, copy the cached matrices of the model's state version into a
 * fresh statement buffer and return it, with a palloc'd copy of the block
 * tids (NULL if unknown); otherwise NULL.
 */
double *
state_cache_fetch(const char *model, const StateVersion *version, Size n,
				  ItemPointerData **tids, int *ntids)
{
	dlist_iter	it;

	*tids = NULL;
	*ntids = 0;
	if (unlearn_state_cache_kb <= 0)
		return NULL;
	dlist_foreach(it, &lru)
	{
		CacheEntry *e = dlist_container(CacheEntry, node, it.cur);

		if (e->version.xmin == version->xmin &&
			ItemPointerEquals(&e->version.ctid, (ItemPointer) &version->ctid) &&
			e->version.blocks_file == version->blocks_file &&
			e->ndoubles == n && strcmp(e->model, model) == 0)
		{
			double	   *copy = state_cache_buffer(n);

			memcpy(copy, e->matrices, sizeof(double) * n);
			if (e->tids)
			{
				*tids = palloc(sizeof(ItemPointerData) * e->ntids);
				memcpy(*tids, e->tids, sizeof(ItemPointerData) * e->ntids);
				*ntids = e->ntids;
			}
			dlist_move_head(&lru, &e->node);
			return copy;
		}
	}
	return NULL;
}

/*
 * Remember the matrices of a state version that is now in the blocks
 * table.  A statement buffer from state_cache_buffer is adopted without a
 * copy (the caller must not modify it afterwards); any other memory is
 * copied.
 */
void
state_cache_store(const char *model, const StateVersion *version,
				  double *matrices, Size n, const ItemPointerData *tids, int ntids)
{
	MemoryContext old;
	PendingBuffer *pending;
	CacheEntry *e;
	dlist_mutable_iter it;
	int			versions = 0;

	if (unlearn_state_cache_kb <= 0 || n * sizeof(double) > (Size) unlearn_state_cache_kb * 1024)
		return;
	/* keep the newest other version of this model, drop older ones */
	dlist_foreach_modify(it, &lru)
	{
		CacheEntry *other = dlist_container(CacheEntry, node, it.cur);

		if (strcmp(other->model, model) == 0 && ++versions > 1)
			free_entry(other);
	}
	make_room(n * sizeof(double));

	old = MemoryContextSwitchTo(TopMemoryContext);
	e = palloc(sizeof(CacheEntry));
	e->model = pstrdup(model);
	e->version = *version;
	e->ndoubles = n;
	e->tids = NULL;
	e->ntids = 0;
	if (tids != NULL && ntids > 0)
	{
		e->tids = palloc(sizeof(ItemPointerData) * ntids);
		memcpy(e->tids, tids, sizeof(ItemPointerData) * ntids);
		e->ntids = ntids;
	}
	pending = find_pending(matrices);
	if (pending != NULL && !pending->adopted)
	{
		pending->adopted = true;
		e->matrices = matrices;
	}
	else
	{
		e->matrices = alloc_matrices(n);
		memcpy(e->matrices, matrices, sizeof(double) * n);
	}
	MemoryContextSwitchTo(old);
	dlist_push_head(&lru, &e->node);
	cached_bytes += n * sizeof(double);
}

/* Forget every version of a model (dropped or replaced). */
void
state_cache_forget(const char *model)
{
	dlist_mutable_iter it;

	dlist_foreach_modify(it, &lru)
	{
		CacheEntry *e = dlist_container(CacheEntry, node, it.cur);

		if (strcmp(e->model, model) == 0)
			free_entry(e);
	}
}

static void
assign_cache_size(int newval, void *extra)
{
	unlearn_state_cache_kb = newval;
	make_room(0);
}

void
state_cache_init(void)
{
	DefineCustomIntVariable("unlearn.state_cache",
							"Memory per backend for cached Hessian factors and Gram matrices.",
							"Matrices of recently used model states are kept so that a removal "
							"need not read them back; 0 disables the cache.",
							&unlearn_state_cache_kb,
							65536, 0, MAX_KILOBYTES,
							PGC_USERSET, GUC_UNIT_KB,
							NULL, assign_cache_size, NULL);
}
