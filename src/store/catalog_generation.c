/*-------------------------------------------------------------------------
 *
 * catalog_generation.c
 *	  A counter in shared memory that every transaction which wrote
 *	  unlearn.models advances, so that a backend may keep what it read of
 *	  the catalog between its transactions and know when to read it again
 *	  (exec/model_cache.c).
 *
 * Invariants:
 *
 *	- Every write of unlearn.models, by the extension or by a superuser's
 *	  statement, fires the statement trigger unlearn._catalog_written
 *	  (catalog 0.21.0 on), which marks the transaction.
 *	- A marked transaction advances the counter before its commit becomes
 *	  visible (pre-commit) and again after (commit), or once when it aborts.
 *	  So a backend that reads the counter, then the catalog, and finds the
 *	  counter unchanged when it next looks, read rows no commit has replaced
 *	  since, except one it could not yet see at the time, as with a
 *	  snapshot taken at the first look.
 *	- The transaction that wrote reads nothing kept until it ends
 *	  (catalog_generation_usable), so it sees its own writes; nor does a
 *	  REPEATABLE READ or SERIALIZABLE one, which reads the catalog in the
 *	  latest snapshot (catalog_read_latest) and keeps nothing of it.
 *	- Without shared memory (unlearn not preloaded), before 0.21.0, or with
 *	  prepared transactions enabled (COMMIT PREPARED runs no callback of
 *	  the preparing backend), nothing is usable: every read goes to the
 *	  catalog.
 *
 *-------------------------------------------------------------------------
 */
#include "store/store.h"

#include "access/twophase.h"
#include "access/xact.h"
#include "commands/trigger.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

PG_FUNCTION_INFO_V1(unlearn_catalog_written);

static pg_atomic_uint64 *generation = NULL;
static bool written_here = false;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
generation_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(sizeof(pg_atomic_uint64));
}

static void
generation_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	generation = ShmemInitStruct("unlearn catalog generation", sizeof(pg_atomic_uint64), &found);
	if (!found)
		pg_atomic_init_u64(generation, 0);
	LWLockRelease(AddinShmemInitLock);
}

static void
generation_xact_callback(XactEvent event, void *arg)
{
	if (!written_here || generation == NULL)
		return;
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			pg_atomic_fetch_add_u64(generation, 1);
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			pg_atomic_fetch_add_u64(generation, 1);
			written_here = false;
			break;
	}
}

/*
 * The counter now, and whether what was read at an earlier value of it
 * may still be used: false inside a transaction that wrote the catalog,
 * or when nothing is kept (see the header).
 */
bool
catalog_generation_usable(uint64 *now)
{
	*now = 0;
	if (generation == NULL || written_here || max_prepared_xacts > 0 ||
		IsolationUsesXactSnapshot() || !catalog_has_async_removal())
		return false;
	*now = pg_atomic_read_u64(generation);
	return true;
}

/* unlearn._catalog_written(): AFTER ... FOR EACH STATEMENT on unlearn.models */
Datum
unlearn_catalog_written(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("unlearn._catalog_written() must be called as a trigger")));
	written_here = true;
	return PointerGetDatum(NULL);
}

void
catalog_generation_init(void)
{
	RegisterXactCallback(generation_xact_callback, NULL);
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = generation_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = generation_shmem_startup;
}
