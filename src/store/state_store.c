/*-------------------------------------------------------------------------
 *
 * state_store.c
 *	  Where the removal matrices of the models live: shared memory,
 *	  published at commit.
 *
 * The matrices of a model (the packed Cholesky factors of H, class by
 * class, then K' for the guo bound; "the factor" below) are a function of
 * the rows the model reflects, its anchor w0 and Lambda.  They are never
 * written to a table or to WAL.  They live in one DSA area placed in the
 * main shared memory segment (unlearn.state_memory, so the library must be
 * in shared_preload_libraries), indexed by a dshash table keyed by
 * (database, model name).
 *
 * Invariants
 *
 *	1. A published entry is tagged with the version (xmin, ctid) of the
 *	   model's unlearn.model_state row that was written together with it,
 *	   in the same (sub)transaction.  A writer uses an entry only if its tag
 *	   equals the version of the row it has locked; any other entry (none,
 *	   evicted, from before a crash or a restore, or from a transaction that
 *	   failed after publishing) is a miss, and the writer rebuilds the
 *	   factor by re-anchoring at the current w (removal.c).  Row versions
 *	   never repeat: a version is removed only once it is dead to every
 *	   snapshot, and a new version in its slot has a later xid.
 *
 *	2. Published entries are immutable.  A statement works on a private
 *	   buffer of this backend (a chunk of the same area, or local memory
 *	   when the area is full): a copy of the published entry, or of the
 *	   buffer an enclosing subtransaction staged.  A buffer staged by the
 *	   current subtransaction is changed in place by its next statement,
 *	   since an error in that statement aborts that subtransaction too.
 *
 *	3. Subtransaction abort frees the buffers it staged; subtransaction
 *	   commit hands them to its parent, keeping the newest per model.  At
 *	   top-level pre-commit (and pre-prepare) the newest buffer of each
 *	   model replaces its entry: the exchange of one pointer.  Publishing
 *	   before the commit record is safe by 1: if the commit then fails,
 *	   the tag names a row version that never becomes visible (and the
 *	   model's next change rebuilds).  ROLLBACK publishes nothing.
 *
 *	4. Publishing never allocates, so a commit never fails for want of
 *	   store memory: staging inserts the model's entry (in a subtransaction
 *	   of its own; if the area is full the buffer is simply not published),
 *	   a buffer that had to live in local memory is copied in at commit
 *	   only if the area has room without evicting, and an entry evicted
 *	   between staging and commit is not re-created.  An entry that holds
 *	   no chunk is a placeholder and matches no version.
 *
 *	5. Only the writer holding the model's row locks (FOR NO KEY UPDATE
 *	   on unlearn.models, FOR UPDATE on unlearn.model_state) checks an
 *	   entry out or publishes one, so an entry changes only between
 *	   writers.  Readers copy under the dshash partition lock; a replaced
 *	   chunk is zeroed and freed only after its entry points elsewhere.
 *
 *	6. Every chunk that stops being needed (a replaced or evicted entry, a
 *	   superseded or aborted buffer) is zeroed before it is freed: after
 *	   commit no old version of a factor is left in memory.
 *
 *	7. The area never grows beyond unlearn.state_memory: when an
 *	   allocation during a statement fails, the least recently used entry
 *	   is evicted (its model rebuilds on its next change) until it fits;
 *	   an allocation larger than the whole area evicts nothing.
 *
 * Without shared_preload_libraries the store is absent: every checkout
 * misses, buffers are local, nothing is published, and changes of a
 * trained table still go through (each one rebuilds).  Training refuses.
 *
 *-------------------------------------------------------------------------
 */
#include "store/store.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "funcapi.h"
#include "lib/dshash.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/dsa.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

int			unlearn_state_memory_mb = 128;

typedef struct StoreKey
{
	Oid			database;
	uint32		name_hash;		/* of the whole name; the name may be cut */
	char		name[NAMEDATALEN];
} StoreKey;

typedef struct StoreEntry
{
	StoreKey	key;
	StateVersion version;
	dsa_pointer chunk;
	Size		offset;			/* of the BLAS_ALIGN-aligned matrices in chunk */
	Size		ndoubles;
	pg_atomic_uint64 last_used;
} StoreEntry;

typedef struct StoreControl
{
	int			tranche;
	Size		area_size;
	dshash_table_handle table;
	pg_atomic_uint64 clock;
	pg_atomic_uint64 hits;
	pg_atomic_uint64 misses;
	pg_atomic_uint64 evictions;
	char		area[FLEXIBLE_ARRAY_MEMBER];
} StoreControl;

static const dshash_parameters store_params = {
	sizeof(StoreKey), sizeof(StoreEntry), dshash_memcmp, dshash_memhash, 0
};

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static StoreControl *control = NULL;
static dsa_area *area = NULL;
static dshash_table *table = NULL;
static bool warned_absent = false;

/*
 * A buffer of this backend: a statement's working copy, then (staged) the
 * version the statement wrote, or a request to drop the model's entry.
 */
typedef struct PrivateBuffer
{
	StoreKey	key;
	SubTransactionId subxact;
	bool		staged;
	bool		forget;			/* no matrices: drop the entry at commit */
	bool		publishable;	/* staged, and its entry reserved */
	StateVersion version;
	dsa_pointer chunk;			/* or InvalidDsaPointer: local memory */
	void	   *local;
	Size		offset;
	Size		ndoubles;
	double	   *matrices;
} PrivateBuffer;

static List *buffers = NIL;		/* in TopMemoryContext, oldest first */

static void
remember_buffer(PrivateBuffer *b)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	buffers = lappend(buffers, b);
	MemoryContextSwitchTo(old);
}

static Size
area_bytes(void)
{
	return (Size) unlearn_state_memory_mb * 1024 * 1024;
}

static void
store_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(add_size(offsetof(StoreControl, area), area_bytes()));
}

static void
store_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	control = ShmemInitStruct("unlearn state store",
							  add_size(offsetof(StoreControl, area), area_bytes()), &found);
	if (!found)
	{
		dsa_area   *a;
		dshash_table *t;
		dshash_parameters params = store_params;

		control->tranche = LWLockNewTrancheId();
		control->area_size = area_bytes();
		pg_atomic_init_u64(&control->clock, 0);
		pg_atomic_init_u64(&control->hits, 0);
		pg_atomic_init_u64(&control->misses, 0);
		pg_atomic_init_u64(&control->evictions, 0);
		a = dsa_create_in_place(control->area, control->area_size, control->tranche, NULL);
		dsa_pin(a);
		/* never a DSM segment beyond the area: its size is the bound */
		dsa_set_size_limit(a, control->area_size);
		params.tranche_id = control->tranche;
		t = dshash_create(a, &params, NULL);
		control->table = dshash_get_hash_table_handle(t);
		dshash_detach(t);
		dsa_detach(a);
	}
	LWLockRelease(AddinShmemInitLock);
}

/* attach this backend to the area, once; false if there is no store */
static bool
store_attach(void)
{
	MemoryContext old;
	dshash_parameters params = store_params;

	if (table != NULL)
		return true;
	if (control == NULL)
		return false;
	old = MemoryContextSwitchTo(TopMemoryContext);
	LWLockRegisterTranche(control->tranche, "unlearn_state_store");
	area = dsa_attach_in_place(control->area, NULL);
	dsa_pin_mapping(area);
	params.tranche_id = control->tranche;
	table = dshash_attach(area, &params, control->table, NULL);
	MemoryContextSwitchTo(old);
	return true;
}

bool
state_store_available(void)
{
	return control != NULL;
}

/* entry points that need the store (training) refuse without it */
void
state_store_require(void)
{
	if (!state_store_available())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("unlearn must be loaded via shared_preload_libraries"),
				 errdetail("The removal state of the models lives in shared memory that the server sets aside at start-up."),
				 errhint("Add unlearn to shared_preload_libraries in postgresql.conf and restart the server.")));
}

static void
make_key(StoreKey *key, const char *model)
{
	memset(key, 0, sizeof(StoreKey));
	key->database = MyDatabaseId;
	key->name_hash = hash_bytes((const unsigned char *) model, strlen(model));
	strlcpy(key->name, model, NAMEDATALEN);
}

static bool
same_version(const StateVersion *a, const StateVersion *b)
{
	return TransactionIdEquals(a->xmin, b->xmin) && ItemPointerEquals((ItemPointer) &a->ctid,
																	  (ItemPointer) &b->ctid);
}

/*
 * key's entry, share-locked, if it holds version (and n doubles, unless n
 * is 0); else NULL, holding no lock.
 */
static StoreEntry *
find_version(const StoreKey *key, const StateVersion *version, Size n)
{
	StoreEntry *e = dshash_find(table, key, false);

	if (e != NULL && (!DsaPointerIsValid(e->chunk) || !same_version(&e->version, version) ||
					  (n != 0 && e->ndoubles != n)))
	{
		dshash_release_lock(table, e);
		e = NULL;
	}
	return e;
}

/* zero a chunk nobody can reach any more, and free it (invariant 5) */
static void
free_chunk(dsa_pointer chunk, Size bytes)
{
	memset(dsa_get_address(area, chunk), 0, bytes);
	dsa_free(area, chunk);
}

/* remove key's entry and free its chunk; false if there was none */
static bool
drop_entry(const StoreKey *key)
{
	StoreEntry *e = dshash_find(table, key, true);
	dsa_pointer chunk;
	Size		bytes;

	if (e == NULL)
		return false;
	chunk = e->chunk;
	bytes = e->offset + e->ndoubles * sizeof(double);
	dshash_delete_entry(table, e);
	if (DsaPointerIsValid(chunk))
		free_chunk(chunk, bytes);
	return true;
}

/*
 * Evict the least recently used entry (skipping none: entries are only
 * ever copied under their lock, so any may go).  False if there is none.
 */
static bool
evict_one(void)
{
	dshash_seq_status status;
	StoreEntry *e;
	StoreKey	victim;
	uint64		oldest = PG_UINT64_MAX;
	bool		found = false;

	dshash_seq_init(&status, table, false);
	while ((e = dshash_seq_next(&status)) != NULL)
	{
		uint64		used = pg_atomic_read_u64(&e->last_used);

		if (used < oldest)
		{
			oldest = used;
			victim = e->key;
			found = true;
		}
	}
	dshash_seq_term(&status);
	if (!found)
		return false;
	if (drop_entry(&victim))
		pg_atomic_fetch_add_u64(&control->evictions, 1);
	return true;
}

/*
 * bytes of the area, evicting entries until they fit if may_evict (never
 * for a request the empty area could not hold); or invalid.
 */
static dsa_pointer
allocate_chunk(Size bytes, bool may_evict)
{
	dsa_pointer chunk = InvalidDsaPointer;

	if (!store_attach())
		return chunk;
	if (bytes >= control->area_size)
		return chunk;
	do
		chunk = dsa_allocate_extended(area, bytes, DSA_ALLOC_HUGE | DSA_ALLOC_NO_OOM);
	while (!DsaPointerIsValid(chunk) && may_evict && evict_one());
	return chunk;
}

/*
 * A BLAS_ALIGN-aligned buffer of n doubles: in the area if it fits
 * (evicting others), else in local memory; or, if area_only, in the area
 * if it fits without evicting, else NULL.
 */
static PrivateBuffer *
new_buffer(const StoreKey *key, Size n, bool area_only)
{
	PrivateBuffer *b = MemoryContextAllocZero(TopMemoryContext, sizeof(PrivateBuffer));
	Size		bytes = n * sizeof(double) + BLAS_ALIGN;
	char	   *base;

	b->key = *key;
	b->subxact = GetCurrentSubTransactionId();
	b->chunk = InvalidDsaPointer;
	/* listed before it holds memory, so an abort frees whatever it gets */
	remember_buffer(b);
	b->chunk = allocate_chunk(bytes, !area_only);
	if (DsaPointerIsValid(b->chunk))
		base = dsa_get_address(area, b->chunk);
	else if (area_only)
	{
		buffers = list_delete_ptr(buffers, b);
		pfree(b);
		return NULL;
	}
	else
		base = b->local = MemoryContextAllocHuge(TopMemoryContext, bytes);
	b->matrices = (double *) TYPEALIGN(BLAS_ALIGN, base);
	b->offset = (char *) b->matrices - base;
	b->ndoubles = n;
	return b;
}

static void
free_buffer(PrivateBuffer *b)
{
	if (b->matrices != NULL)
		memset(b->matrices, 0, b->ndoubles * sizeof(double));
	if (DsaPointerIsValid(b->chunk))
		dsa_free(area, b->chunk);
	else if (b->local != NULL)
		pfree(b->local);
	pfree(b);
}

/* the newest buffer of key, or NULL */
static PrivateBuffer *
newest_buffer(const StoreKey *key)
{
	PrivateBuffer *found = NULL;
	ListCell   *lc;

	foreach(lc, buffers)
	{
		PrivateBuffer *b = lfirst(lc);

		if (memcmp(&b->key, key, sizeof(StoreKey)) == 0)
			found = b;
	}
	return found;
}

/* free the buffers of key owned by subxact, but keep */
static void
free_superseded(const StoreKey *key, SubTransactionId subxact, PrivateBuffer *keep)
{
	ListCell   *lc;

	foreach(lc, buffers)
	{
		PrivateBuffer *b = lfirst(lc);

		if (b != keep && b->subxact == subxact && memcmp(&b->key, key, sizeof(StoreKey)) == 0)
		{
			buffers = foreach_delete_current(buffers, lc);
			free_buffer(b);
		}
	}
}

/*
 * A private copy of model's matrices at version (n doubles), for a
 * statement to change; NULL if no such version is at hand (invariant 1),
 * and the caller rebuilds.
 */
double *
state_store_checkout(const char *model, const StateVersion *version, Size n)
{
	StoreKey	key;
	PrivateBuffer *mine;
	PrivateBuffer *b;
	StoreEntry *e;

	make_key(&key, model);
	mine = newest_buffer(&key);
	if (mine != NULL)
	{
		if (mine->forget || !mine->staged || !same_version(&mine->version, version) ||
			mine->ndoubles != n)
			return NULL;
		if (mine->subxact == GetCurrentSubTransactionId())
			return mine->matrices;
		b = new_buffer(&key, n, false);
		memcpy(b->matrices, mine->matrices, n * sizeof(double));
		return b->matrices;
	}
	if (!store_attach())
	{
		if (!warned_absent)
			ereport(WARNING,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("unlearn is not in shared_preload_libraries: every change rebuilds the removal state of its models"),
					 errhint("Add unlearn to shared_preload_libraries in postgresql.conf and restart the server.")));
		warned_absent = true;
		return NULL;
	}
	e = find_version(&key, version, n);
	if (e == NULL)
	{
		pg_atomic_fetch_add_u64(&control->misses, 1);
		return NULL;
	}
	pg_atomic_write_u64(&e->last_used, pg_atomic_fetch_add_u64(&control->clock, 1));
	dshash_release_lock(table, e);

	/*
	 * Allocate outside the entry's lock (an eviction takes other locks),
	 * then copy under it, checking that it is still the same version.
	 */
	b = new_buffer(&key, n, false);
	e = find_version(&key, version, n);
	if (e == NULL)
	{
		buffers = list_delete_ptr(buffers, b);
		free_buffer(b);
		pg_atomic_fetch_add_u64(&control->misses, 1);
		return NULL;
	}
	memcpy(b->matrices, (char *) dsa_get_address(area, e->chunk) + e->offset, n * sizeof(double));
	dshash_release_lock(table, e);
	pg_atomic_fetch_add_u64(&control->hits, 1);
	return b->matrices;
}

/* a new private buffer of n doubles (contents undefined), to fill */
double *
state_store_buffer(const char *model, Size n)
{
	StoreKey	key;

	make_key(&key, model);
	return new_buffer(&key, n, false)->matrices;
}

/*
 * Make sure key has an entry (a placeholder if new) for the commit to
 * publish into without allocating (invariant 4).  Inserting may need
 * memory the area does not have: then it fails in a subtransaction of its
 * own, and false says the buffer is not to be published.
 */
static bool
reserve_entry(const StoreKey *key)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile bool reserved = false;
	StoreEntry *e;

	if (!store_attach())
		return false;
	/* the common case: the entry is there (finding allocates nothing) */
	e = dshash_find(table, key, false);
	if (e != NULL)
	{
		dshash_release_lock(table, e);
		return true;
	}
	BeginInternalSubTransaction(NULL);
	PG_TRY();
	{
		bool		found;
		StoreEntry *inserted = dshash_find_or_insert(table, key, &found);

		if (!found)
		{
			inserted->version.xmin = InvalidTransactionId;
			ItemPointerSetInvalid((ItemPointer) &inserted->version.ctid);
			inserted->chunk = InvalidDsaPointer;
			inserted->offset = inserted->ndoubles = 0;
			pg_atomic_init_u64(&inserted->last_used, pg_atomic_fetch_add_u64(&control->clock, 1));
		}
		dshash_release_lock(table, inserted);
		reserved = true;
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	return reserved;
}

/*
 * A new buffer of n doubles in the area, only if it fits without evicting
 * anything (warming after start-up must not push out what is in use); or
 * NULL.
 */
double *
state_store_buffer_if_room(const char *model, Size n)
{
	StoreKey	key;
	PrivateBuffer *b;

	make_key(&key, model);
	b = new_buffer(&key, n, true);
	return b ? b->matrices : NULL;
}

/* matrices (a buffer of this backend) were written with version */
void
state_store_stage(const char *model, const double *matrices, const StateVersion *version)
{
	StoreKey	key;
	ListCell   *lc;
	PrivateBuffer *b = NULL;

	make_key(&key, model);
	foreach(lc, buffers)
	{
		PrivateBuffer *c = lfirst(lc);

		if (c->matrices == matrices)
			b = c;
	}
	if (b == NULL || memcmp(&b->key, &key, sizeof(StoreKey)) != 0)
		elog(ERROR, "unlearn: state buffer of model \"%s\" is not this backend's", model);
	b->staged = true;
	b->version = *version;
	b->subxact = GetCurrentSubTransactionId();
	/* newest last: the one the commit publishes */
	buffers = list_delete_ptr(buffers, b);
	remember_buffer(b);
	free_superseded(&key, b->subxact, b);
	b->publishable = reserve_entry(&key);
}

/* the model keeps no matrices from now on: drop its entry at commit */
void
state_store_forget(const char *model)
{
	PrivateBuffer *b = MemoryContextAllocZero(TopMemoryContext, sizeof(PrivateBuffer));

	/* attach now: the commit that drops the entry must not allocate */
	(void) store_attach();
	make_key(&b->key, model);
	b->subxact = GetCurrentSubTransactionId();
	b->forget = true;
	b->chunk = InvalidDsaPointer;
	remember_buffer(b);
	free_superseded(&b->key, b->subxact, b);
}

/*
 * Replace (or drop) key's entry by b, the newest buffer of its model.
 * Runs at pre-commit, so it never allocates from the area by evicting,
 * and never inserts (invariant 4).
 */
static void
publish(PrivateBuffer *b)
{
	StoreEntry *e;
	dsa_pointer old;
	Size		old_bytes;

	if (!b->forget && !DsaPointerIsValid(b->chunk) && b->publishable)
	{
		/* the area was full when the statement ran: copy it in if it fits now */
		dsa_pointer chunk = allocate_chunk(b->ndoubles * sizeof(double) + BLAS_ALIGN, false);

		if (DsaPointerIsValid(chunk))
		{
			char	   *base = dsa_get_address(area, chunk);
			double	   *matrices = (double *) TYPEALIGN(BLAS_ALIGN, base);

			memcpy(matrices, b->matrices, b->ndoubles * sizeof(double));
			memset(b->matrices, 0, b->ndoubles * sizeof(double));
			pfree(b->local);
			b->local = NULL;
			b->chunk = chunk;
			b->offset = (char *) matrices - base;
			b->matrices = matrices;
		}
	}
	if (b->forget || !DsaPointerIsValid(b->chunk) || !b->publishable)
	{
		/* nothing to publish: the old version must not stay either */
		drop_entry(&b->key);
		return;
	}
	e = dshash_find(table, &b->key, true);
	if (e == NULL)
		return;					/* evicted since staging: the next change rebuilds */
	old = e->chunk;
	old_bytes = e->offset + e->ndoubles * sizeof(double);
	e->version = b->version;
	e->chunk = b->chunk;
	e->offset = b->offset;
	e->ndoubles = b->ndoubles;
	pg_atomic_write_u64(&e->last_used, pg_atomic_fetch_add_u64(&control->clock, 1));
	dshash_release_lock(table, e);
	b->chunk = InvalidDsaPointer;	/* the entry's now */
	b->matrices = NULL;
	if (DsaPointerIsValid(old))
		free_chunk(old, old_bytes);
}

static void
store_xact_callback(XactEvent event, void *arg)
{
	List	   *all;
	ListCell   *lc;

	if (event == XACT_EVENT_PRE_COMMIT || event == XACT_EVENT_PRE_PREPARE)
	{
		/* the newest buffer of each model, if staged, replaces its entry */
		foreach(lc, buffers)
		{
			PrivateBuffer *b = lfirst(lc);

			if (newest_buffer(&b->key) == b && (b->staged || b->forget) && store_attach())
				publish(b);
		}
	}
	else if (event != XACT_EVENT_ABORT && event != XACT_EVENT_PARALLEL_ABORT)
		return;
	all = buffers;
	buffers = NIL;
	foreach(lc, all)
		free_buffer(lfirst(lc));
	list_free(all);
}

static void
store_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					   SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc;

	if (event != SUBXACT_EVENT_ABORT_SUB && event != SUBXACT_EVENT_COMMIT_SUB)
		return;
	foreach(lc, buffers)
	{
		PrivateBuffer *b = lfirst(lc);

		if (b->subxact != mySubid)
			continue;
		if (event == SUBXACT_EVENT_ABORT_SUB)
		{
			buffers = foreach_delete_current(buffers, lc);
			free_buffer(b);
		}
		else
			b->subxact = parentSubid;
	}
	/* the parent now keeps only the newest buffer of each model */
	if (event == SUBXACT_EVENT_COMMIT_SUB)
		foreach(lc, buffers)
		{
			PrivateBuffer *b = lfirst(lc);

			if (b->subxact == parentSubid && newest_buffer(&b->key) != b)
			{
				buffers = foreach_delete_current(buffers, lc);
				free_buffer(b);
			}
		}
}

/*
 * Is model's factor at version resident?  (For the status view; a
 * version not at hand is rebuilt by the model's next change.)
 */
bool
state_store_resident(const char *model, const StateVersion *version)
{
	StoreKey	key;
	StoreEntry *e;

	if (!store_attach())
		return false;
	make_key(&key, model);
	e = find_version(&key, version, 0);
	if (e == NULL)
		return false;
	dshash_release_lock(table, e);
	return true;
}

/*
 * A 64-bit hash of model's resident matrices at version, as hex, or NULL
 * (for tests of ROLLBACK: the published bytes stay as they were).
 */
char *
state_store_digest(const char *model, const StateVersion *version)
{
	StoreKey	key;
	StoreEntry *e;
	uint64		h;

	if (!store_attach())
		return NULL;
	make_key(&key, model);
	e = find_version(&key, version, 0);
	if (e == NULL)
		return NULL;
	h = hash_bytes_extended((const unsigned char *) dsa_get_address(area, e->chunk) + e->offset,
							(int) (e->ndoubles * sizeof(double)), 0);
	dshash_release_lock(table, e);
	return psprintf("%016llx", (unsigned long long) h);
}

/* drop model's entry now (unlearn_evict); true if there was one */
bool
state_store_evict(const char *model)
{
	StoreKey	key;

	if (!store_attach())
		return false;
	make_key(&key, model);
	if (!drop_entry(&key))
		return false;
	pg_atomic_fetch_add_u64(&control->evictions, 1);
	return true;
}

/* counters for unlearn_runtime(): size, entries, hits, misses, evictions */
void
state_store_counters(int64 *size, int64 *entries, int64 *hits, int64 *misses,
					 int64 *evictions)
{
	dshash_seq_status status;
	StoreEntry *e;

	*size = *entries = *hits = *misses = *evictions = 0;
	if (!store_attach())
		return;
	*size = (int64) control->area_size;
	dshash_seq_init(&status, table, false);
	while ((e = dshash_seq_next(&status)) != NULL)
		if (DsaPointerIsValid(e->chunk))
			(*entries)++;
	dshash_seq_term(&status);
	*hits = (int64) pg_atomic_read_u64(&control->hits);
	*misses = (int64) pg_atomic_read_u64(&control->misses);
	*evictions = (int64) pg_atomic_read_u64(&control->evictions);
}

void
state_store_init(void)
{
	RegisterXactCallback(store_xact_callback, NULL);
	RegisterSubXactCallback(store_subxact_callback, NULL);
	/* a PGC_POSTMASTER setting can only be defined at start-up */
	if (!process_shared_preload_libraries_in_progress)
		return;
	DefineCustomIntVariable("unlearn.state_memory",
							"Shared memory for the removal matrices of the models.",
							"The Hessian factors (and K' for the guo bound) of recently changed models; "
							"least recently used out. A model whose matrices are not resident rebuilds "
							"them with one pass over its table on its next change.",
							&unlearn_state_memory_mb, 128, 2, INT_MAX / 2,
							PGC_POSTMASTER, GUC_UNIT_MB, NULL, NULL, NULL);
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = store_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = store_shmem_startup;
}
