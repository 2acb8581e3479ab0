/*-------------------------------------------------------------------------
 *
 * progress.c
 *	  Progress of long training and re-anchoring work, in shared memory
 *	  that every session can read through unlearn_progress() (the view
 *	  unlearn.progress), as pg_stat_progress_* does for VACUUM.
 *
 * One slot per backend, indexed by backend ID; a parallel worker counts
 * the rows it maps into its leader's slot.  Only the owning backend
 * writes a slot's fields, under the slot's spinlock; the row counter is
 * an atomic that the leader's workers add to.  A slot is in use from
 * progress_begin to progress_end, or to the abort of the (sub)transaction
 * that began it, whichever comes first, so a cancelled training leaves no
 * slot behind.
 *
 * A slot reports one model.  Work on another model nested in it (a table
 * change inside a pass that retrains another role's model) is not
 * reported at all: it would otherwise show that model's figures under the
 * outer model's owner.  Rows are counted only while a pass of the slot's
 * model runs, and only by unlearn._row_x calls naming that model.
 *
 * Row counts and gradient norms depend on the table's rows, so
 * unlearn_progress() shows them only to roles with the privileges of the
 * model's owner (and superusers); members of pg_read_all_stats also see
 * the model, its table, the command, phase, pass and times; other roles
 * see the pid and database only.
 *
 * Cost: O(1) per pass and iteration; per row, one local increment and
 * one atomic add per PROGRESS_ROW_BATCH rows.
 *
 *-------------------------------------------------------------------------
 */
#include "store/store.h"

#include <math.h>

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "mb/pg_wchar.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/backendid.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/timestamp.h"

/* rows a backend counts locally before adding them to the slot */
#define PROGRESS_ROW_BATCH 1024
#define PROGRESS_COLUMNS 16
/* rows_done to gradient_norm: the columns that depend on the rows */
#define FIRST_FIGURE_COLUMN 8
#define LAST_FIGURE_COLUMN 13

typedef struct ProgressSlot
{
	slock_t		mutex;
	bool		in_use;
	int			pid;
	Oid			database;
	Oid			role;			/* the outer role of the session working */
	Oid			owner;			/* the model's owner */
	Oid			relid;
	char		model[NAMEDATALEN];	/* clipped on a character boundary */
	uint32		model_hash;		/* of the whole name */
	bool		pass_running;	/* a pass's query runs: rows count */
	char		command[24];
	char		phase[32];
	int			calls_per_row;	/* row function calls per row in this pass */
	int			pass;
	int			iteration;
	int			classes;
	int			classes_done;
	int64		rows_total;		/* -1: not known yet */
	double		gradient_norm;	/* NaN: none yet */
	TimestampTz started;
	TimestampTz phase_started;
	pg_atomic_uint64 rows_done;
} ProgressSlot;

static ProgressSlot *slots = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* this backend's slot while it works, and the nesting level that began it */
static ProgressSlot *my_slot = NULL;
static int	my_level = 0;
static uint64 rows_unflushed = 0;

/* nested work on another model: reports nothing while depth > 0 */
static int	silent_depth = 0;
static int	silent_level = 0;

static bool
reporting(void)
{
	return my_slot != NULL && silent_depth == 0;
}

static uint32
name_hash(const char *name, int len)
{
	return hash_bytes((const unsigned char *) name, len);
}

static Size
slots_size(void)
{
	return mul_size(MaxBackends, sizeof(ProgressSlot));
}

static void
progress_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(slots_size());
}

static void
progress_shmem_startup(void)
{
	bool		found;
	int			i;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	slots = ShmemInitStruct("unlearn progress", slots_size(), &found);
	if (!found)
	{
		memset(slots, 0, slots_size());
		for (i = 0; i < MaxBackends; i++)
		{
			SpinLockInit(&slots[i].mutex);
			pg_atomic_init_u64(&slots[i].rows_done, 0);
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

/* the slot of backend id, or NULL without shared memory */
static ProgressSlot *
slot_of(BackendId id)
{
	if (slots == NULL || id < 1 || id > MaxBackends)
		return NULL;
	return &slots[id - 1];
}

static void
release_slot(void)
{
	ProgressSlot *slot = my_slot;

	silent_depth = 0;
	if (slot == NULL)
		return;
	my_slot = NULL;
	rows_unflushed = 0;
	SpinLockAcquire(&slot->mutex);
	slot->in_use = false;
	slot->pass_running = false;
	SpinLockRelease(&slot->mutex);
}

static void
progress_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PREPARE)
		release_slot();
}

static void
progress_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						  SubTransactionId parentSubid, void *arg)
{
	if (event != SUBXACT_EVENT_ABORT_SUB)
		return;
	if (my_slot != NULL && GetCurrentTransactionNestLevel() <= my_level)
		release_slot();
	else if (silent_depth > 0 && GetCurrentTransactionNestLevel() <= silent_level)
		silent_depth = 0;
	if (my_slot != NULL)
	{
		SpinLockAcquire(&my_slot->mutex);
		my_slot->pass_running = false;
		SpinLockRelease(&my_slot->mutex);
	}
}

void
progress_init(void)
{
	RegisterXactCallback(progress_xact_callback, NULL);
	RegisterSubXactCallback(progress_subxact_callback, NULL);
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = progress_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = progress_shmem_startup;
}

/*
 * Start reporting command on model (owned by owner, over relid) in this
 * backend's slot.  Returns PROGRESS_BEGAN if this call took the slot,
 * PROGRESS_JOINED if the backend reports this model already (the outer
 * command keeps the slot), PROGRESS_SILENT if it reports another model
 * (nothing is reported until the matching progress_end), or
 * PROGRESS_JOINED without shared memory.  Pass the result to
 * progress_end.
 */
int
progress_begin(const char *command, const char *model, Oid owner, Oid relid)
{
	ProgressSlot *slot = slot_of(MyBackendId);
	int			len = strlen(model);
	TimestampTz now;

	if (silent_depth > 0 ||
		(my_slot != NULL && (my_slot->owner != owner || my_slot->relid != relid ||
							 my_slot->model_hash != name_hash(model, len))))
	{
		if (silent_depth++ == 0)
			silent_level = GetCurrentTransactionNestLevel();
		return PROGRESS_SILENT;
	}
	if (slot == NULL || my_slot != NULL)
		return PROGRESS_JOINED;
	now = GetCurrentTimestamp();
	pg_atomic_write_u64(&slot->rows_done, 0);
	SpinLockAcquire(&slot->mutex);
	slot->in_use = true;
	slot->pid = MyProcPid;
	slot->database = MyDatabaseId;
	slot->role = GetOuterUserId();
	slot->owner = owner;
	slot->relid = relid;
	memcpy(slot->model, model, pg_mbcliplen(model, len, NAMEDATALEN - 1));
	slot->model[pg_mbcliplen(model, len, NAMEDATALEN - 1)] = '\0';
	slot->model_hash = name_hash(model, len);
	slot->pass_running = false;
	strlcpy(slot->command, command, sizeof(slot->command));
	strlcpy(slot->phase, "starting", sizeof(slot->phase));
	slot->calls_per_row = 1;
	slot->pass = 0;
	slot->iteration = 0;
	slot->classes = 0;
	slot->classes_done = 0;
	slot->rows_total = -1;
	slot->gradient_norm = get_float8_nan();
	slot->started = now;
	slot->phase_started = now;
	SpinLockRelease(&slot->mutex);
	my_slot = slot;
	my_level = GetCurrentTransactionNestLevel();
	rows_unflushed = 0;
	return PROGRESS_BEGAN;
}

void
progress_end(int began)
{
	if (began == PROGRESS_BEGAN)
		release_slot();
	else if (began == PROGRESS_SILENT && silent_depth > 0)
		silent_depth--;
}

/*
 * A new phase; pass > 0 numbers a pass over the table, whose rows call the
 * row function calls_per_row times; rows_total -1 keeps the known total.
 */
void
progress_phase(const char *phase, int pass, int calls_per_row, int64 rows_total)
{
	ProgressSlot *slot = my_slot;
	TimestampTz now = GetCurrentTimestamp();

	if (!reporting())
		return;
	rows_unflushed = 0;
	SpinLockAcquire(&slot->mutex);
	pg_atomic_write_u64(&slot->rows_done, 0);
	strlcpy(slot->phase, phase, sizeof(slot->phase));
	if (pass > 0)
		slot->pass = pass;
	slot->calls_per_row = Max(calls_per_row, 1);
	if (rows_total >= 0)
		slot->rows_total = rows_total;
	slot->pass_running = pass > 0;
	slot->phase_started = now;
	SpinLockRelease(&slot->mutex);
}

/* a pass ended having read rows rows: the rows of every later pass */
void
progress_pass_done(int64 rows)
{
	ProgressSlot *slot = my_slot;

	if (!reporting())
		return;
	rows_unflushed = 0;
	SpinLockAcquire(&slot->mutex);
	slot->pass_running = false;
	pg_atomic_write_u64(&slot->rows_done, (uint64) rows * slot->calls_per_row);
	slot->rows_total = rows;
	SpinLockRelease(&slot->mutex);
}

/* Newton's state after a pass: the largest iteration count and gradient norm */
void
progress_iteration(int iteration, int classes, int classes_done, double gradient_norm)
{
	ProgressSlot *slot = my_slot;

	if (!reporting())
		return;
	SpinLockAcquire(&slot->mutex);
	slot->iteration = iteration;
	slot->classes = classes;
	slot->classes_done = classes_done;
	slot->gradient_norm = gradient_norm;
	SpinLockRelease(&slot->mutex);
}

/*
 * One row mapped for model (len bytes) by unlearn._row_x: counted in the
 * slot of this backend or of its parallel leader while a pass of that
 * model runs there.
 */
void
progress_count_row(const char *model, int len)
{
	ProgressSlot *slot;

	if (++rows_unflushed < PROGRESS_ROW_BATCH)
		return;
	slot = my_slot != NULL ? (reporting() ? my_slot : NULL) :
		slot_of(ParallelLeaderBackendId);
	if (slot != NULL && slot->in_use && slot->pass_running &&
		slot->model_hash == name_hash(model, len))
		pg_atomic_fetch_add_u64(&slot->rows_done, rows_unflushed);
	rows_unflushed = 0;
}

/* may the current role see the row-derived figures of owner's model? */
static bool
may_see_figures(Oid owner)
{
	return superuser() || has_privs_of_role(GetUserId(), owner);
}

/*
 * unlearn_progress() -> SETOF record: one row per backend training or
 * re-anchoring a model now.
 */
PG_FUNCTION_INFO_V1(unlearn_progress);
Datum
unlearn_progress(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	for (i = 0; slots != NULL && i < MaxBackends; i++)
	{
		ProgressSlot copy;
		Datum		values[PROGRESS_COLUMNS];
		bool		nulls[PROGRESS_COLUMNS];
		uint64		rows_done;
		bool		figures;
		int			c;

		SpinLockAcquire(&slots[i].mutex);
		memcpy(&copy, &slots[i], offsetof(ProgressSlot, rows_done));
		SpinLockRelease(&slots[i].mutex);
		if (!copy.in_use)
			continue;
		rows_done = pg_atomic_read_u64(&slots[i].rows_done);
		figures = may_see_figures(copy.owner);
		memset(nulls, true, sizeof(nulls));
		values[0] = Int32GetDatum(copy.pid);
		values[1] = ObjectIdGetDatum(copy.database);
		values[2] = ObjectIdGetDatum(copy.role);
		values[3] = CStringGetTextDatum(copy.model);
		values[4] = ObjectIdGetDatum(copy.relid);
		values[5] = CStringGetTextDatum(copy.command);
		values[6] = CStringGetTextDatum(copy.phase);
		values[7] = Int32GetDatum(copy.pass);
		values[8] = Int64GetDatum((int64) (rows_done / copy.calls_per_row));
		values[9] = Int64GetDatum(copy.rows_total);
		values[10] = Int32GetDatum(copy.iteration);
		values[11] = Int32GetDatum(copy.classes);
		values[12] = Int32GetDatum(copy.classes_done);
		values[13] = Float8GetDatum(copy.gradient_norm);
		values[14] = TimestampTzGetDatum(copy.started);
		values[15] = TimestampTzGetDatum(copy.phase_started);
		nulls[0] = nulls[1] = false;
		if (figures || has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS))
			for (c = 2; c < PROGRESS_COLUMNS; c++)
				nulls[c] = c >= FIRST_FIGURE_COLUMN && c <= LAST_FIGURE_COLUMN;
		if (figures)
		{
			nulls[8] = false;
			nulls[9] = copy.rows_total < 0;
			nulls[10] = nulls[11] = nulls[12] = copy.classes == 0;
			nulls[13] = isnan(copy.gradient_norm);
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
