/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  The maintenance worker: it keeps removal budgets fresh and warms the
 *	  removal matrices after a start-up, so that a user's statement rarely
 *	  pays an O(n p^2) pass.
 *
 * A launcher (a static background worker, started once recovery is over,
 * connected to no database) wakes every unlearn.worker_naptime seconds, or
 * at once when a transaction commits a statement that made a model's
 * re-anchoring due (worker_note_change).  For each database it starts
 * one short-lived worker, one at a time, which, if the database has this
 * version of the extension, takes each model due, each in its own
 * transaction, as the extension's owner (privilege.c):
 *
 *	- due: with a = unlearn.worker_reanchor_at and r the residual its last
 *	  re-anchoring or training measured (ledger), beta - r >= a (eps' - r):
 *	  the model spent the share a of what that measurement left, which at
 *	  first (r ~ 0) is beta >= a eps'.  The worker re-anchors it
 *	  (removal.c: the Hessian rebuilt at the current w, beta replaced by
 *	  the measured residual; ledger 'reanchor').  If the new residual is
 *	  above a eps' / 2, re-anchoring freed too little: a model with
 *	  on_exhausted = retrain is retrained with fresh noise (ledger
 *	  'retrain'); a suspending one keeps the re-anchoring, and is due again
 *	  only after spending the share a of what is left, so the worker never
 *	  thrashes.
 *	- the first round after start-up also rebuilds the matrices of every
 *	  ready model that are not resident (ledger 'rebuild'), while they fit
 *	  the store without evicting anything.
 *
 * Async models (deferred.c): a transaction that queued changes of one
 * wakes the launcher when it commits (worker_note_queued), which visits
 * the database once its oldest request is unlearn.apply_delay old, or
 * sooner when unlearn.apply_batch rows are queued or unlearn_wait asks.
 * That visit, and every round's, first applies the queue of each async
 * model with one, each in a REPEATABLE READ transaction of its own that
 * locks no table (apply_async_queue), so no writer waits for it.  A failed
 * apply leaves the queue intact, is recorded in the model's apply_error
 * and apply_failures, and is tried again after 2^failures seconds (at
 * most unlearn.worker_naptime); one that lost a race for the model row
 * (a serialization failure, a lock timeout) is tried again after
 * unlearn.apply_delay.  The re-anchoring and rebuilding below leave
 * models with a queue alone: their applies do that work.
 *
 * Whether a model needs work is decided before any lock, so a model with
 * nothing to do never queues a lock in its writers' way; its work then
 * takes the same locks as unlearn_retrain (SHARE on the table, then the
 * model row) and decides again, with lock_timeout set, so a busy model is
 * skipped and taken in the next round.  The work is the same as that of a
 * statement that finds its budget exhausted or its matrices missing, done
 * earlier and off the user's path.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"

PGDLLEXPORT void unlearn_launcher_main(Datum arg);
PGDLLEXPORT void unlearn_database_worker_main(Datum arg);

static bool unlearn_worker_enabled = true;
static double unlearn_worker_reanchor_at = 0.75;
static int	worker_naptime = 10;
static int	worker_model_timeout = 600000;
static int	apply_delay = 1000;
static int	apply_batch = 20000;

#define MAX_REQUESTS 16

/* a database with async queues to apply */
typedef struct ApplyRequest
{
	Oid			database;
	TimestampTz first;			/* when the oldest request since its last
								 * visit came */
	int64		rows;			/* rows queued since */
	bool		now;			/* unlearn_wait asked: visit at once */
} ApplyRequest;

/* what statements ask of the launcher */
typedef struct WorkerShared
{
	slock_t		mutex;
	int			launcher_procno;	/* -1 while there is no launcher */
	int			nrequests;
	bool		overflow;		/* more databases asked than fit: all */
	Oid			requests[MAX_REQUESTS];
	int			napplies;
	bool		apply_overflow; /* more databases asked to apply than fit */
	ApplyRequest applies[MAX_REQUESTS];
} WorkerShared;

/* what the launcher asks of a database's worker (bgw_extra) */
typedef struct VisitKind
{
	bool		warm;			/* rebuild matrices that are not resident */
	bool		apply_only;		/* apply async queues, nothing else */
} VisitKind;

static WorkerShared *shared = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
worker_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(sizeof(WorkerShared));
}

static void
worker_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = ShmemInitStruct("unlearn maintenance worker", sizeof(WorkerShared), &found);
	if (!found)
	{
		SpinLockInit(&shared->mutex);
		shared->launcher_procno = -1;
		shared->nrequests = 0;
		shared->overflow = false;
		shared->napplies = 0;
		shared->apply_overflow = false;
	}
	LWLockRelease(AddinShmemInitLock);
}

/* wake the launcher to take database now rather than at its next round */
static void
wake_launcher(Oid database)
{
	int			procno;
	int			i;
	bool		listed = false;

	SpinLockAcquire(&shared->mutex);
	for (i = 0; i < shared->nrequests; i++)
		listed |= shared->requests[i] == database;
	if (!listed && shared->nrequests < MAX_REQUESTS)
		shared->requests[shared->nrequests++] = database;
	else if (!listed)
		shared->overflow = true;
	procno = shared->launcher_procno;
	SpinLockRelease(&shared->mutex);
	if (procno >= 0)
		SetLatch(&ProcGlobal->allProcs[procno].procLatch);
}

static bool wake_at_commit = false;
static int64 queued_async_rows = 0;

/*
 * Ask the launcher to apply the async queues of database: rows more rows
 * were queued, or (now) at once.  The launcher is woken when the request
 * makes the database due.
 */
static void
request_apply(Oid database, int64 rows, bool now)
{
	int			procno;
	int			i;
	bool		wake = now;

	if (shared == NULL)
		return;
	SpinLockAcquire(&shared->mutex);
	for (i = 0; i < shared->napplies; i++)
		if (shared->applies[i].database == database)
			break;
	if (i == shared->napplies && i < MAX_REQUESTS)
	{
		shared->applies[i].database = database;
		shared->applies[i].first = GetCurrentTimestamp();
		shared->applies[i].rows = 0;
		shared->applies[i].now = false;
		shared->napplies++;
		wake = true;			/* the launcher's timer starts now */
	}
	if (i < shared->napplies)
	{
		shared->applies[i].rows += rows;
		shared->applies[i].now |= now;
		wake |= shared->applies[i].rows >= apply_batch &&
			shared->applies[i].rows - rows < apply_batch;
	}
	else
	{
		wake = !shared->apply_overflow;
		shared->apply_overflow = true;
	}
	procno = shared->launcher_procno;
	SpinLockRelease(&shared->mutex);
	if (wake && procno >= 0)
		SetLatch(&ProcGlobal->allProcs[procno].procLatch);
}

/* this transaction queued a row change of an async model (deferred.c) */
void
worker_note_queued(void)
{
	queued_async_rows++;
}

/* unlearn_wait: have this database's async queues applied now */
void
worker_request_apply(void)
{
	request_apply(MyDatabaseId, 0, true);
}

/* whether a maintenance worker applies async queues */
bool
worker_applies(void)
{
	return shared != NULL && unlearn_worker_enabled;
}

/*
 * Is a re-anchoring due for m at spent budget beta, given the residual r
 * measured by its last re-anchoring or training?  With a =
 * unlearn.worker_reanchor_at: beta - r >= a (eps' - r), the share a of
 * what that measurement left (at first, r ~ 0, beta >= a eps').
 */
static bool
reanchor_due(UnlearnModel *m, double spent, double measured)
{
	double		limit = budget_limit(m);

	/*
	 * a last measurement that did not fit (a model exact at sigma = 0 on
	 * a table whose rounding passes its precision limit) would not fit
	 * after another one either: the worker leaves it to the statements
	 */
	if (measured >= limit)
		return false;
	return unlearn_reanchor && limit > 0 &&
		spent - measured >= unlearn_worker_reanchor_at * (limit - measured);
}

/*
 * A statement changed m, whose budget stood at spent_before: if that made
 * a re-anchoring due, wake the launcher once this transaction commits
 * (before that, the worker would not see the change).  Only the statement
 * that makes it due wakes it; a model the worker could not take waits for
 * the next round.
 */
void
worker_note_change(UnlearnModel *m, double spent_before)
{
	double		measured;

	if (shared == NULL || !unlearn_worker_enabled || m->released.status != MODEL_READY ||
		m->released.spent < unlearn_worker_reanchor_at * budget_limit(m))
		return;					/* not due whatever was measured */
	measured = catalog_measured_spent(m->def.name);
	if (reanchor_due(m, m->released.spent, measured) && !reanchor_due(m, spent_before, measured))
		wake_at_commit = true;
}

static void
worker_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT && wake_at_commit)
		wake_launcher(MyDatabaseId);
	if (event == XACT_EVENT_COMMIT && queued_async_rows > 0 && unlearn_worker_enabled)
		request_apply(MyDatabaseId, queued_async_rows, false);
	if (event != XACT_EVENT_PRE_COMMIT && event != XACT_EVENT_PARALLEL_PRE_COMMIT &&
		event != XACT_EVENT_PRE_PREPARE)
	{
		wake_at_commit = false;
		queued_async_rows = 0;
	}
}

/* are databases waiting to be visited? */
static bool
requests_waiting(void)
{
	bool		waiting;

	SpinLockAcquire(&shared->mutex);
	waiting = shared->nrequests > 0 || shared->overflow;
	SpinLockRelease(&shared->mutex);
	return waiting;
}

/* the databases a round visits: those asked for, or (all) every one */
static List *
round_databases(bool all)
{
	List	   *out = NIL;
	MemoryContext cxt = CurrentMemoryContext;
	int			i;

	SpinLockAcquire(&shared->mutex);
	all |= shared->overflow;
	if (!all)
		for (i = 0; i < shared->nrequests; i++)
			out = lappend_oid(out, shared->requests[i]);
	shared->nrequests = 0;
	shared->overflow = false;
	SpinLockRelease(&shared->mutex);
	if (all)
	{
		Relation	rel;
		TableScanDesc scan;
		HeapTuple	tuple;

		list_free(out);
		out = NIL;
		StartTransactionCommand();
		rel = table_open(DatabaseRelationId, AccessShareLock);
		scan = table_beginscan_catalog(rel, 0, NULL);
		while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
		{
			Form_pg_database db = (Form_pg_database) GETSTRUCT(tuple);
			MemoryContext old;

			if (!db->datallowconn || db->datistemplate)
				continue;
			old = MemoryContextSwitchTo(cxt);
			out = lappend_oid(out, db->oid);
			MemoryContextSwitchTo(old);
		}
		table_endscan(scan);
		table_close(rel, AccessShareLock);
		CommitTransactionCommand();
		MemoryContextSwitchTo(cxt);
	}
	return out;
}

/*
 * Milliseconds until request r is due (0: it is): asked at once,
 * unlearn.apply_batch rows queued, or unlearn.apply_delay after its first
 * request.
 */
static long
request_wait_ms(const ApplyRequest *r, TimestampTz now)
{
	TimestampTz due = TimestampTzPlusMilliseconds(r->first, apply_delay);

	if (r->now || r->rows >= apply_batch || due <= now)
		return 0;
	return (long) ((due - now + 999) / 1000);
}

/*
 * The databases whose async queues are due for an apply, taken off the
 * requests; with *all, a request was lost and every database is due.
 */
static List *
apply_databases(bool *all)
{
	List	   *out = NIL;
	TimestampTz now = GetCurrentTimestamp();
	int			i,
				kept = 0;

	SpinLockAcquire(&shared->mutex);
	*all = shared->apply_overflow;
	shared->apply_overflow = false;
	for (i = 0; i < shared->napplies; i++)
	{
		ApplyRequest *r = &shared->applies[i];

		if (*all || request_wait_ms(r, now) == 0)
			out = lappend_oid(out, r->database);
		else
			shared->applies[kept++] = *r;
	}
	shared->napplies = kept;
	SpinLockRelease(&shared->mutex);
	return out;
}

/*
 * How long until the first request left among the async applies is due
 * (0: now), or -1 if there is none.  Requests that came while the
 * launcher waited for a worker set its latch then, and that wait used it
 * up: the launcher looks here before it sleeps.
 */
static long
next_apply_wait(void)
{
	TimestampTz now = GetCurrentTimestamp();
	long		wait = -1;
	int			i;

	SpinLockAcquire(&shared->mutex);
	for (i = 0; i < shared->napplies; i++)
	{
		long		ms = request_wait_ms(&shared->applies[i], now);

		if (wait < 0 || ms < wait)
			wait = ms;
	}
	if (shared->apply_overflow)
		wait = 0;
	SpinLockRelease(&shared->mutex);
	return wait;
}

/* run one database's worker and wait for it to finish */
static void
visit_database(Oid database, bool warm, bool apply_only)
{
	VisitKind	kind = {warm, apply_only};

	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;
	pid_t		pid;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	strlcpy(worker.bgw_library_name, "unlearn", BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, "unlearn_database_worker_main", BGW_MAXLEN);
	snprintf(worker.bgw_name, BGW_MAXLEN, "unlearn worker for database %u", database);
	strlcpy(worker.bgw_type, "unlearn worker", BGW_MAXLEN);
	worker.bgw_main_arg = ObjectIdGetDatum(database);
	StaticAssertStmt(sizeof(VisitKind) <= BGW_EXTRALEN, "VisitKind must fit bgw_extra");
	memcpy(worker.bgw_extra, &kind, sizeof(kind));
	worker.bgw_notify_pid = MyProcPid;
	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
	{
		ereport(LOG,
				(errmsg("unlearn worker: no background worker slot free; database %u waits for the next round",
						database),
				 errhint("Raise max_worker_processes.")));
		return;
	}
	if (WaitForBackgroundWorkerStartup(handle, &pid) == BGWH_STARTED)
		(void) WaitForBackgroundWorkerShutdown(handle);
	pfree(handle);
}

static void
launcher_exit(int code, Datum arg)
{
	SpinLockAcquire(&shared->mutex);
	shared->launcher_procno = -1;
	SpinLockRelease(&shared->mutex);
}

void
unlearn_launcher_main(Datum arg)
{
	bool		warm = true;
	TimestampTz last_full = 0;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	SpinLockAcquire(&shared->mutex);
	shared->launcher_procno = MyProc->pgprocno;
	SpinLockRelease(&shared->mutex);
	before_shmem_exit(launcher_exit, (Datum) 0);

	for (;;)
	{
		long		apply_wait;
		long		wait;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (unlearn_worker_enabled)
		{
			bool		all_applies;
			List	   *applies = apply_databases(&all_applies);
			ListCell   *lc;

			if (all_applies)
			{
				/* a request was lost: the next round visits every database */
				last_full = 0;
				list_free(applies);
				applies = NIL;
			}
			foreach(lc, applies)
				visit_database(lfirst_oid(lc), false, true);
			list_free(applies);
		}
		if (unlearn_worker_enabled)
		{
			bool		all = warm ||
				TimestampDifferenceExceeds(last_full, GetCurrentTimestamp(),
										   worker_naptime * 1000);
			List	   *databases = round_databases(all);
			ListCell   *lc;

			foreach(lc, databases)
				visit_database(lfirst_oid(lc), warm, false);
			if (all)
				last_full = GetCurrentTimestamp();
			warm = false;
			elog(DEBUG1, "unlearn launcher: round over %d databases done", list_length(databases));
			list_free(databases);
		}
		else
			elog(DEBUG1, "unlearn launcher: worker is off");
		/* a request that came during the round (its wake-up was consumed) */
		if (unlearn_worker_enabled && requests_waiting())
			continue;
		wait = worker_naptime * 1000L;
		apply_wait = unlearn_worker_enabled ? next_apply_wait() : -1;
		if (apply_wait == 0)
			continue;
		if (apply_wait > 0 && apply_wait < wait)
			wait = apply_wait;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 wait, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/*
 * The models of this database to look at, or NIL without this version of
 * unlearn: with apply, the async models with a queue due for an apply;
 * else the ready models.  The queries run in the extension context: its
 * search_path holds nothing a database's roles can define.
 */
static List *
due_models(bool warm, bool apply)
{
	List	   *out = NIL;
	MemoryContext cxt = CurrentMemoryContext;
	ExtensionContext ctx;

	StartTransactionCommand();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	PushActiveSnapshot(GetTransactionSnapshot());
	if (OidIsValid(get_extension_oid("unlearn", true)))
	{
		enter_extension_context(&ctx);
		if (SPI_execute("SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'unlearn' "
						"AND extversion = '" UNLEARN_VERSION "'", true, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not read pg_extension");
		if (SPI_processed == 1)
		{
			MemoryContext old = MemoryContextSwitchTo(cxt);

			out = apply ? catalog_async_models_due(worker_naptime) :
				catalog_ready_models(unlearn_worker_reanchor_at, warm);
			MemoryContextSwitchTo(old);
		}
		leave_extension_context(&ctx);
	}
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	MemoryContextSwitchTo(cxt);
	return out;
}

typedef enum WorkOutcome
{
	WORK_NONE,
	WORK_DONE,
	WORK_STORE_FULL
} WorkOutcome;

/*
 * Does m need the worker?  *due: its budget is due for a re-anchoring;
 * otherwise, warming, its matrices may not be resident.
 */
static bool
needs_work(UnlearnModel *m, bool warm, bool *due)
{
	StateVersion version;

	*due = false;
	if (m->released.status != MODEL_READY || !model_owner_may_read(m))
		return false;
	if (m->released.spent >= unlearn_worker_reanchor_at * budget_limit(m))
		*due = reanchor_due(m, m->released.spent, catalog_measured_spent(m->def.name));
	return *due || (warm && !(catalog_state_version(m->def.name, &version) &&
							  state_store_resident(m->def.name, &version)));
}

/*
 * Re-anchor (or retrain) model `name` if it is due, or, warming, rebuild
 * its matrices if they are not resident.  Decides first without locks,
 * so that a model with nothing to do never queues a lock in its table's
 * writers' way; then locks as unlearn_retrain does and decides again.
 * Runs in the extension context inside a transaction of its own.
 */
static WorkOutcome
refresh_model(const char *name, bool warm)
{
	UnlearnModel *m;
	double		limit;
	double		spent_before;
	double	   *matrices;
	ErrorData  *torn;
	bool		due,
				retrained = false;

	/*
	 * The first look takes no lock, and reads the model's catalog row and
	 * its state by two queries, each with its own snapshot: a writer's
	 * commit between them can make them disagree.  So a check that fails
	 * here only says to look again under the lock, which alone may call
	 * the state corrupt.
	 */
	m = load_model_checked(name, true, false, &torn);
	if (torn != NULL)
	{
		Oid			owner,
					source;

		FreeErrorData(torn);
		if (!catalog_model_identity(name, false, true, &owner, &source))
			return WORK_NONE;
		lock_source(source);
	}
	else if (m == NULL || !needs_work(m, warm, &due))
		return WORK_NONE;
	else
		lock_source(m->def.source);
	m = catalog_load_model(name, true, true, true);
	if (m == NULL || !needs_work(m, warm, &due))
		return WORK_NONE;
	limit = budget_limit(m);
	matrices = due ? state_store_buffer(name, model_matrix_doubles(m)) :
		state_store_buffer_if_room(name, model_matrix_doubles(m));
	if (matrices == NULL)
		return WORK_STORE_FULL;
	spent_before = m->released.spent;
	if (!reanchor_into(m, matrices) ||
		(due && m->def.retrain_on_exhausted &&
		 m->released.spent > 0.5 * unlearn_worker_reanchor_at * limit))
	{
		retrain_or_rest(m, false, NULL);
		m->released.retrains++;
		m->call.retrained_now = retrained = true;
	}
	catalog_update_model(m);
	cohorts_after_change(m, NULL, NULL);
	catalog_ledger(m, retrained ? "retrain" : due ? "reanchor" : "rebuild", 0, 0, 0.0, retrained);
	ereport(LOG,
			(errmsg("unlearn worker: %s model \"%s\": spent %.6g of %.6g, now %.6g",
					retrained ? "retrained" : due ? "re-anchored" : "rebuilt the matrices of",
					name, spent_before, limit, m->released.spent)));
	return WORK_DONE;
}

/*
 * Run work(name, arg) in a transaction of its own, as the extension's
 * owner (REPEATABLE READ with repeatable).  With limits, under the
 * worker's lock timeout (1 s) and unlearn.worker_model_timeout: a table
 * owner's code (an index predicate, say) runs in every pass, and one
 * model's work may not hold the worker, and with it every other model of
 * every database, for longer than this.  An error is logged, rolled back
 * and returned in the caller's memory context; NULL if none.
 */
static ErrorData *
run_model_work(const char *name, bool repeatable, bool limits, void (*work) (const char *, void *),
			   void *arg)
{
	MemoryContext cxt = CurrentMemoryContext;
	ErrorData  *volatile failure = NULL;

	PG_TRY();
	{
		ExtensionContext ctx;

		StartTransactionCommand();
		if (repeatable)
			(void) set_config_option("transaction_isolation", "repeatable read", PGC_USERSET,
									 PGC_S_SESSION, GUC_ACTION_SET, true, 0, false);
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		PushActiveSnapshot(GetTransactionSnapshot());
		if (limits)
		{
			(void) set_config_option("lock_timeout", "1000", PGC_USERSET, PGC_S_SESSION,
									 GUC_ACTION_LOCAL, true, 0, false);
			if (worker_model_timeout > 0)
				enable_timeout_after(STATEMENT_TIMEOUT, worker_model_timeout);
			pgstat_report_activity(STATE_RUNNING, name);
		}
		enter_extension_context(&ctx);
		work(name, arg);
		disable_timeout(STATEMENT_TIMEOUT, false);
		leave_extension_context(&ctx);
		SPI_finish();
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		HOLD_INTERRUPTS();
		disable_timeout(STATEMENT_TIMEOUT, false);
		MemoryContextSwitchTo(cxt);
		failure = CopyErrorData();
		EmitErrorReport();
		FlushErrorState();
		AbortCurrentTransaction();
		RESUME_INTERRUPTS();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	if (limits)
		pgstat_report_activity(STATE_IDLE, NULL);
	return failure;
}

typedef struct RefreshWork
{
	bool		warm;
	WorkOutcome outcome;
} RefreshWork;

static void
refresh_work(const char *name, void *arg)
{
	RefreshWork *w = (RefreshWork *) arg;

	w->outcome = refresh_model(name, w->warm);
}

/* one model, in a transaction of its own; an error is logged and skipped */
static WorkOutcome
refresh_in_transaction(const char *name, bool warm)
{
	RefreshWork w = {warm, WORK_NONE};
	ErrorData  *failure = run_model_work(name, false, true, refresh_work, &w);

	if (failure != NULL)
	{
		FreeErrorData(failure);
		return WORK_NONE;
	}
	return w.outcome;
}

/*
 * What unlearn.status shows of a failed apply, which a model's read
 * grantees see too: the message of a time limit, a cancellation, a lack
 * of resources or a state the extension refused (classes 57, 53, 55, XX:
 * texts that quote no value), else only the SQLSTATE (a data exception's
 * message may quote a value of a row).  The server log has every message.
 */
static const char *
apply_error_text(ErrorData *failure)
{
	int			category = ERRCODE_TO_CATEGORY(failure->sqlerrcode);

	if (category == ERRCODE_OPERATOR_INTERVENTION || category == ERRCODE_INSUFFICIENT_RESOURCES ||
		category == ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE || category == ERRCODE_INTERNAL_ERROR)
		return failure->message;
	return psprintf("the apply failed with SQLSTATE %s; the server log has its message",
					unpack_sql_state(failure->sqlerrcode));
}

static void
apply_work(const char *name, void *arg)
{
	int64		entries = apply_async_queue(name);

	elog(DEBUG1, "unlearn worker: applied %lld queued changes of model \"%s\"",
		 (long long) entries, name);
}

static void
note_failure_work(const char *name, void *arg)
{
	catalog_note_apply(name, apply_error_text((ErrorData *) arg));
}

/*
 * Apply async model name's queue (apply_async_queue) in a REPEATABLE READ
 * transaction of its own.  An error is logged; one that says the model was
 * busy asks for another visit after unlearn.apply_delay, any other is
 * recorded in the model's apply_error, and the queue stays as it was.
 */
static void
apply_in_transaction(const char *name)
{
	ErrorData  *failure = run_model_work(name, true, true, apply_work, NULL);
	ErrorData  *note_failure;

	if (failure == NULL)
		return;
	if (failure->sqlerrcode == ERRCODE_T_R_SERIALIZATION_FAILURE ||
		failure->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE ||
		failure->sqlerrcode == ERRCODE_T_R_DEADLOCK_DETECTED)
		request_apply(MyDatabaseId, 0, false);
	else if ((note_failure = run_model_work(name, false, false, note_failure_work, failure)) != NULL)
		FreeErrorData(note_failure);
	FreeErrorData(failure);
}

void
unlearn_database_worker_main(Datum arg)
{
	VisitKind	kind;
	bool		warm;
	List	   *models;
	ListCell   *lc;

	memcpy(&kind, MyBgworkerEntry->bgw_extra, sizeof(kind));
	warm = kind.warm;
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(arg), InvalidOid, 0);
	/* what a database's owner may set for it must not stop or mislead the worker */
	SetConfigOption("default_transaction_isolation", "read committed", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("default_transaction_read_only", "off", PGC_SUSET, PGC_S_OVERRIDE);
	pgstat_report_appname("unlearn worker");
	models = due_models(false, true);
	foreach(lc, models)
	{
		CHECK_FOR_INTERRUPTS();
		apply_in_transaction(lfirst(lc));
	}
	if (kind.apply_only)
		proc_exit(0);
	models = due_models(warm, false);
	foreach(lc, models)
	{
		CHECK_FOR_INTERRUPTS();
		if (refresh_in_transaction(lfirst(lc), warm) == WORK_STORE_FULL)
			warm = false;		/* warm no further: nothing is evicted for it */
	}
	proc_exit(0);
}

void
worker_init(void)
{
	BackgroundWorker launcher;

	if (!process_shared_preload_libraries_in_progress)
		return;
	DefineCustomBoolVariable("unlearn.worker",
							 "Run the maintenance worker.",
							 "It re-anchors models whose budget is running low and rebuilds the removal "
							 "matrices after a start-up, in its own transactions.",
							 &unlearn_worker_enabled, true, PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("unlearn.worker_naptime",
							"Seconds between the maintenance worker's rounds over all databases.",
							NULL, &worker_naptime, 10, 1, 86400, PGC_SIGHUP, GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomIntVariable("unlearn.worker_model_timeout",
							"Longest time the maintenance worker spends on one model.",
							"Work on a model that takes longer is cancelled, logged and taken again in a "
							"later round; 0 sets no limit.",
							&worker_model_timeout, 600000, 0, INT_MAX, PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("unlearn.apply_delay",
							"Longest time a change queued for an async model waits for the worker's apply.",
							"The worker applies a database's async queues once its oldest request is this old, "
							"or sooner when unlearn.apply_batch rows are queued.",
							&apply_delay, 1000, 0, 3600000, PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("unlearn.apply_batch",
							"Queued rows of a database's async models at which the worker applies them at once.",
							NULL, &apply_batch, 20000, 1, INT_MAX, PGC_SIGHUP, 0,
							NULL, NULL, NULL);
	DefineCustomRealVariable("unlearn.worker_reanchor_at",
							 "Share of a model's removal budget spent at which the worker re-anchors it.",
							 "A transaction that takes a model past it wakes the worker when it commits.",
							 &unlearn_worker_reanchor_at, 0.75, 0.05, 1.0, PGC_SIGHUP, 0,
							 NULL, NULL, NULL);
	RegisterXactCallback(worker_xact_callback, NULL);
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = worker_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = worker_shmem_startup;

	memset(&launcher, 0, sizeof(launcher));
	launcher.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	launcher.bgw_start_time = BgWorkerStart_RecoveryFinished;
	launcher.bgw_restart_time = 10;
	strlcpy(launcher.bgw_library_name, "unlearn", BGW_MAXLEN);
	strlcpy(launcher.bgw_function_name, "unlearn_launcher_main", BGW_MAXLEN);
	strlcpy(launcher.bgw_name, "unlearn launcher", BGW_MAXLEN);
	strlcpy(launcher.bgw_type, "unlearn launcher", BGW_MAXLEN);
	RegisterBackgroundWorker(&launcher);
}
