/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  Reading and writing unlearn.models, unlearn.model_state and
 *	  unlearn.ledger through SPI, and the triggers on trained tables.
 *
 * All functions here expect an open SPI connection and run inside the
 * extension's security context (privilege.c): only the extension writes
 * these tables.  Every statement is schema-qualified and parameterised.
 * Row-level security (sql/unlearn.sql) lets other roles read the state
 * rows of their own models only.  Every load checks what it reads against
 * the model's definition (corrupt_model, SQLSTATE XX001).  The matrices
 * live in shared memory (state_store.c), staged here under the version of
 * the state row written with them.
 *
 *-------------------------------------------------------------------------
 */
#include "store/store.h"

#include <math.h>

#include "access/heaptoast.h"
#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_inherits.h"
#include "access/xact.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "parser/parse_func.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

/* stored names of the enums, indexed by their values */
static const char *const loss_names[] = {"logistic", "squared"};
static const char *const bound_names[] = {"guo", "taylor", "exact"};
static const char *const status_names[] = {"ready", "too few rows", "suspended"};
static const char *const exhausted_names[] = {"suspend", "retrain"};	/* by retrain_on_exhausted */
static const char *const steps_names[] = {"statement", "row"};	/* by per_row_steps */
static const char *const preprocess_names[] = {"standardize", "declared", "none"};
static const char *const nulls_names[] = {"error", "skip", "impute"};	/* by UnlearnNulls */
/*
 * The catalog's queries that every row of a deferred or async model's
 * table runs, planned once per backend and kept (SPI_keepplan): the plan
 * cache replans them after DDL on the catalog, and a query's text, which
 * differs between catalog versions, is its key.  At most a few dozen.
 */
typedef struct KeptQuery
{
	char	   *text;
	SPIPlanPtr	plan;
	struct KeptQuery *next;
} KeptQuery;

static KeptQuery *kept_queries = NULL;

/* read the kept queries in the latest snapshot (catalog_read_latest) */
static bool read_latest = false;

/*
 * With on, the catalog queries the queue's trigger runs read the latest
 * snapshot rather than the transaction's: a REPEATABLE READ writer must
 * queue for the models that exist now (a model trained, replaced or
 * dropped after its snapshot was taken locked the table until it
 * committed), not for those of its snapshot.
 */
void
catalog_read_latest(bool on)
{
	read_latest = on;
}

static int
execute_kept(const char *text, int nargs, Oid *types, Datum *values, const char *nulls,
			 bool read_only, long count)
{
	KeptQuery  *q;

	for (q = kept_queries; q != NULL; q = q->next)
		if (strcmp(q->text, text) == 0)
			break;
	if (q == NULL)
	{
		SPIPlanPtr	plan = SPI_prepare(text, nargs, types);

		if (plan == NULL || SPI_keepplan(plan) != 0)
			elog(ERROR, "unlearn: could not prepare a catalog query: %s",
				 SPI_result_code_string(SPI_result));
		q = MemoryContextAlloc(TopMemoryContext, sizeof(KeptQuery));
		q->text = MemoryContextStrdup(TopMemoryContext, text);
		q->plan = plan;
		q->next = kept_queries;
		kept_queries = q;
	}
	if (read_latest)
		return SPI_execute_snapshot(q->plan, values, nulls, GetLatestSnapshot(), InvalidSnapshot,
									read_only, false, count);
	return SPI_execute_plan(q->plan, values, nulls, read_only, count);
}

/* by deferred and async_apply */
static const char *const removal_names[] = {"immediate", "deferred", "async"};
static const char *const mechanism_names[] = {"newton", "noisy_gd", "fisher"};	/* by UnlearnMechanism */
static const char *const noise_names[] = {"gaussian", "laplace"};	/* by UnlearnNoise */

static void write_state(UnlearnModel *m, bool full);

/* --- Datum helpers ------------------------------------------------------ */

static Datum
bytea_from_doubles(const double *v, Size n)
{
	Size		len = sizeof(double) * n;
	bytea	   *b = (bytea *) MemoryContextAllocHuge(CurrentMemoryContext, VARHDRSZ + len);

	SET_VARSIZE(b, VARHDRSZ + len);
	memcpy(VARDATA(b), v, len);
	return PointerGetDatum(b);
}

static double *
doubles_from_bytea(Datum d, Size expected, UnlearnModel *m)
{
	bytea	   *b = DatumGetByteaPP(d);
	Size		len = VARSIZE_ANY_EXHDR(b);
	double	   *v;
	Size		i;

	if (len != expected * sizeof(double))
		corrupt_model(m, "a state vector has the wrong length");
	v = MemoryContextAllocHuge(CurrentMemoryContext, len);
	memcpy(v, VARDATA_ANY(b), len);
	for (i = 0; i < expected; i++)
		if (!isfinite(v[i]))
			corrupt_model(m, "a state vector is not finite");
	return v;
}

/* a 1-D bigint array of n positive counts without nulls */
static int64 *
counts_from_array(Datum arr, int n, UnlearnModel *m)
{
	ArrayType  *a = DatumGetArrayTypeP(arr);
	int64	   *v;
	int			i;

	if (ARR_ELEMTYPE(a) != INT8OID || ARR_HASNULL(a) || ARR_NDIM(a) != 1 ||
		ARR_DIMS(a)[0] != n)
		corrupt_model(m, "a count array has the wrong shape");
	v = palloc(sizeof(int64) * Max(n, 1));
	memcpy(v, ARR_DATA_PTR(a), sizeof(int64) * n);
	/* a declared class may have no row; one taken from the rows has some */
	for (i = 0; i < n; i++)
		if (v[i] < (m->def.classes_declared ? 0 : 1))
			corrupt_model(m, "a class count is out of range");
	return v;
}

/* A stored value of m fails its check: SQLSTATE XX001, never a crash. */
void
corrupt_model(UnlearnModel *m, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("stored state of model \"%s\" is corrupt: %s", m->def.name, what),
			 errhint("Rebuild its removal state with unlearn_retrain('%s'), or drop the model with unlearn_drop('%s').",
					 m->def.name, m->def.name)));
}

/* a 1-D float8 array of finite values without nulls */
static double *
doubles_from_array(Datum arr, int *n, UnlearnModel *m)
{
	ArrayType  *a = DatumGetArrayTypeP(arr);
	int			count;
	double	   *v;
	int			i;

	if (ARR_ELEMTYPE(a) != FLOAT8OID || ARR_HASNULL(a) || ARR_NDIM(a) > 2)
		corrupt_model(m, "a float8 array has the wrong shape");
	count = ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a));
	v = palloc(sizeof(double) * Max(count, 1));
	memcpy(v, ARR_DATA_PTR(a), sizeof(double) * count);
	for (i = 0; i < count; i++)
		if (!isfinite(v[i]))
			corrupt_model(m, "a stored value is not finite");
	*n = count;
	return v;
}

/* a 1-D text array without nulls or empty strings */
static char **
strings_from_array(Datum arr, int *n, UnlearnModel *m)
{
	ArrayType  *a = DatumGetArrayTypeP(arr);
	Datum	   *elems;
	bool	   *nulls;
	char	  **out;
	int			i;

	if (ARR_ELEMTYPE(a) != TEXTOID || ARR_NDIM(a) > 1 || ARR_HASNULL(a))
		corrupt_model(m, "a text array has the wrong shape");
	deconstruct_array(a, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, n);
	out = palloc(sizeof(char *) * Max(*n, 1));
	for (i = 0; i < *n; i++)
		out[i] = TextDatumGetCString(elems[i]);
	return out;
}

/* --- models ------------------------------------------------------------- */

#define MODEL_COLUMNS \
	"model, owner, source, label, features, feature_array, column_types, loss, " \
	"classes, dims, intercept, scale, rows, trained_rows, removed, inserted, " \
	"retrains, lambda, reg, sigma, epsilon, delta, budget, spent, bound, " \
	"on_exhausted, steps, coef, state"
#define MAP_COLUMNS ", preprocess, centre, spread"

#define NULLS_COLUMNS ", nulls, skipped"

#define EXPRESSIONS_COLUMN ", expressions"

#define MAP_GRID_COLUMNS ", intercept_scaling, spread_steps"

#define DECLARED_CLASSES_COLUMN ", classes_declared"

#define REMOVAL_COLUMN ", removal"

#define MECHANISM_COLUMNS ", mechanism, step_size, training_steps, gd_steps, fewest_rows, given_parameters"

#define COHORT_COLUMN ", cohort"

#define NOISE_COLUMNS ", noise, nats, nats_spent, filter"

#define TAKEN_COLUMN ", taken_categories"

/*
 * The release of the installed catalog: 2 for 0.1.0 and 0.2.0 (no column
 * map), 3 for 0.3.0 (no null policy, no rows per class), 4 for 0.4.0 (no
 * read grants), 5 for 0.5.0 (no feature expressions), 6 for 0.6.0 and
 * 0.7.0 (no intercept scaling, an octave spread grid), 7 for 0.8.0 (no
 * declared classes), 8 for 0.9.0 (no training passes), 9 for 0.10.0 (no
 * deferred removal), 10 for 0.11.0 and 0.12.0 (no gradient-only pass), 11
 * from 0.13.0 to 0.17.0 (no mechanism), 12 for 0.18.0 (no cohorts), 13
 * for 0.19.0 (no fisher mechanism, no laplace noise), 14 for 0.20.0 (no
 * one-lookup category groups), 15 for 0.21.0 (no taken categories), 16
 * from 0.22.0.
 * Between installing this library and ALTER
 * EXTENSION unlearn UPDATE, the models of an older catalog are read and
 * written without what it lacks, so that their tables' DML goes on; with
 * no grants table, only owners read a model.
 */
static int
read_catalog_level(void)
{
	Oid			nsp = get_namespace_oid("unlearn", true);
	Oid			models = OidIsValid(nsp) ? get_relname_relid("models", nsp) : InvalidOid;

	if (!OidIsValid(models) || get_attnum(models, "preprocess") == InvalidAttrNumber)
		return 2;
	if (get_attnum(models, "nulls") == InvalidAttrNumber)
		return 3;
	if (!OidIsValid(get_relname_relid("model_grants", nsp)))
		return 4;
	if (get_attnum(models, "expressions") == InvalidAttrNumber)
		return 5;
	if (get_attnum(models, "spread_steps") == InvalidAttrNumber)
		return 6;
	if (get_attnum(models, "classes_declared") == InvalidAttrNumber)
		return 7;
	{
		Oid			row_x_args[3] = {TEXTOID, FLOAT8ARRAYOID, FLOAT8ARRAYOID};

		if (!OidIsValid(LookupFuncName(list_make2(makeString("unlearn"), makeString("_row_x")),
									   3, row_x_args, true)))
			return 8;
	}
	if (get_attnum(models, "removal") == InvalidAttrNumber)
		return 9;
	if (get_attnum(models, "nats_spent") != InvalidAttrNumber)
	{
		Oid			category_args[2] = {ANYELEMENTOID, ANYARRAYOID};

		if (get_attnum(models, "taken_categories") != InvalidAttrNumber)
			return 16;
		if (OidIsValid(LookupFuncName(list_make2(makeString("unlearn"), makeString("_category_values")),
									  2, category_args, true)))
			return 15;
		return 14;
	}
	if (get_attnum(models, "cohort") != InvalidAttrNumber)
		return 13;
	if (get_attnum(models, "mechanism") != InvalidAttrNumber)
		return 12;
	{
		Oid			pass_args[4] = {FLOAT8ARRAYOID, FLOAT8OID, FLOAT8ARRAYOID, TEXTOID};

		if (!OidIsValid(LookupFuncName(list_make2(makeString("unlearn"), makeString("_pass_gradient")),
									   4, pass_args, true)))
			return 10;
	}
	return 11;
}

/*
 * The level read once and kept until an invalidation that could change it
 * arrives: any relation's (a column added to unlearn.models, a table
 * created or dropped by ALTER or DROP EXTENSION) or any function's.  A
 * statement sees every committed catalog change before it reads the level:
 * locking its table processed the invalidations.
 */
static int	kept_level = 0;
static uint64 level_invalidations = 0;

static void
forget_level(Datum arg, Oid relid)
{
	kept_level = 0;
	level_invalidations++;
}

static void
forget_level_syscache(Datum arg, int cacheid, uint32 hashvalue)
{
	kept_level = 0;
	level_invalidations++;
}

static int
catalog_level(void)
{
	static bool registered = false;

	if (!registered)
	{
		CacheRegisterRelcacheCallback(forget_level, (Datum) 0);
		CacheRegisterSyscacheCallback(PROCNAMEARGSNSP, forget_level_syscache, (Datum) 0);
		CacheRegisterSyscacheCallback(NAMESPACENAME, forget_level_syscache, (Datum) 0);
		registered = true;
	}
	if (kept_level == 0)
	{
		uint64		before = level_invalidations;
		int			level = read_catalog_level();

		/* not kept if an invalidation arrived while it was read */
		if (level_invalidations != before)
			return level;
		kept_level = level;
	}
	return kept_level;
}

/*
 * whether the catalog has the row functions of training passes (0.10.0
 * on); before, training and re-anchoring load the rows (train_loaded.c)
 */
bool
catalog_has_cohorts(void)
{
	return catalog_level() >= 13;
}

bool
catalog_has_training_passes(void)
{
	return catalog_level() >= 9;
}

/*
 * whether the catalog has the gradient-only pass unlearn._pass_gradient and
 * the census's unlearn._array_shape (0.13.0 on); before, every Newton pass
 * takes the Hessian and the census reads an array once per expression
 */
bool
catalog_has_lean_passes(void)
{
	return catalog_level() >= 11;
}

/*
 * whether the catalog has unlearn._finite (0.20.0 on): under "nulls":
 * "skip", a row with a feature that is not a finite number is outside the
 * model, like a row with a null
 */
bool
catalog_has_finite_check(void)
{
	return catalog_level() >= 14;
}

/*
 * whether the catalog has "nulls": "impute" and the moments pass's
 * unlearn._row_raw (0.20.0 on)
 */
bool
catalog_has_imputation(void)
{
	return catalog_level() >= 14;
}

/*
 * whether the catalog has unlearn._category_values (0.21.0 on): training
 * passes compute a category() group's features in one lookup per row
 */
bool
catalog_has_category_values(void)
{
	return catalog_level() >= 15;
}

/*
 * whether the catalog has unlearn.models.taken_categories (0.22.0 on):
 * category(column) takes its categories from the rows
 */
bool
catalog_has_taken_categories(void)
{
	return catalog_level() >= 16;
}

/* the first column of the last query's rows, as strings in cxt */
static List *
result_names(MemoryContext cxt)
{
	List	   *out = NIL;
	uint64		i;

	for (i = 0; i < SPI_processed; i++)
	{
		char	   *name = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		MemoryContext old = MemoryContextSwitchTo(cxt);

		out = lappend(out, pstrdup(name));
		MemoryContextSwitchTo(old);
	}
	return out;
}

/*
 * Record the outcome of an apply of async model name's queue: error NULL
 * after one that committed its changes (clearing a past error, without
 * writing the row when there is none), or the message of one that failed,
 * counted in apply_failures, with its time.
 */
void
catalog_note_apply(const char *name, const char *error)
{
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		args[2];
	char		nulls[2] = {' ', error == NULL ? 'n' : ' '};

	args[0] = CStringGetTextDatum(name);
	args[1] = error == NULL ? (Datum) 0 : CStringGetTextDatum(error);
	if (SPI_execute_with_args(error == NULL ?
							  "UPDATE unlearn.models SET apply_error = NULL, apply_failures = 0, "
							  "apply_failed_at = NULL WHERE model = $1 AND apply_failures > 0 AND $2 IS NULL" :
							  "UPDATE unlearn.models SET apply_error = $2, apply_failures = apply_failures + 1, "
							  "apply_failed_at = pg_catalog.clock_timestamp() WHERE model = $1",
							  2, argtypes, args, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not record the apply of model \"%s\"", name);
}

/*
 * The async models with queued changes, oldest entry first, leaving out
 * those whose last apply failed less than 2^failures seconds ago (at most
 * max_backoff seconds).
 */
List *
catalog_async_models_due(int max_backoff)
{
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1];
	MemoryContext cxt = CurrentMemoryContext;

	if (!catalog_has_async_removal())
		return NIL;
	args[0] = Int32GetDatum(max_backoff);
	/* a distributed table's queue is on its workers: its models are always due */
	if (SPI_execute_with_args(psprintf("SELECT m.model FROM unlearn.models m "
									   "JOIN LATERAL (SELECT pg_catalog.min(q.id) AS first FROM unlearn.pending q "
									   "WHERE q.model = m.model) q ON q.first IS NOT NULL%s "
									   "WHERE m.removal = 'async' AND (m.apply_failures <= 0 OR m.apply_failed_at + "
									   "pg_catalog.make_interval(secs => LEAST(2 ^ LEAST(GREATEST(m.apply_failures, 0), 30), $1)) "
									   "<= pg_catalog.clock_timestamp()) ORDER BY q.first NULLS LAST",
									   OidIsValid(get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE)) ?
									   " OR m.source IN (SELECT logicalrelid FROM pg_catalog.pg_dist_partition "
									   "WHERE partmethod = 'h')" : ""),
							  1, argtypes, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not list the async models");
	return result_names(cxt);
}

/* whether the catalog has "removal": "async" (0.21.0 on) */
bool
catalog_has_async_removal(void)
{
	return catalog_level() >= 15;
}

/* whether the catalog keeps a model's row filter (0.20.0 on) */
bool
catalog_has_row_filters(void)
{
	return catalog_level() >= 14;
}

/* whether the catalog has deferred removal (0.11.0 on) */
bool
catalog_has_deferred_removal(void)
{
	return catalog_level() >= 10;
}

/* whether the catalog keeps a classifier's rows per class (0.4.0 on) */
bool
catalog_tracks_classes(void)
{
	return catalog_level() >= 4;
}

/* whether the catalog marks feature expressions (0.6.0 on) */
bool
catalog_has_expressions(void)
{
	return catalog_level() >= 6;
}

/* whether the catalog keeps a model's intercept scaling and spread grid (0.8.0 on) */
bool
catalog_has_map_grid(void)
{
	return catalog_level() >= 7;
}

/* whether the catalog keeps whether a model's classes were declared (0.9.0 on) */
bool
catalog_has_declared_classes(void)
{
	return catalog_level() >= 8;
}

/* whether the catalog keeps read grants (0.5.0 on) */
bool
catalog_has_grants(void)
{
	return catalog_level() >= 5;
}

static Datum
getcol(int col, bool *isnull)
{
	return SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col, isnull);
}

/* the identity of a state version: its model_state row version (xmin, ctid) */
static void
state_version_from_result(StateVersion *version, int xmin_col, int ctid_col)
{
	bool		isnull;

	version->xmin = DatumGetTransactionId(getcol(xmin_col, &isnull));
	version->ctid = *((ItemPointer) DatumGetPointer(getcol(ctid_col, &isnull)));
}

/*
 * Point m->state.factor and m->state.gram into a state_store buffer of m (factors,
 * then K'), copying them there if they are elsewhere (after training).
 */
static void
gather_matrices(UnlearnModel *m)
{
	Size		packed = PACKED_SIZE(m->def.p);
	double	   *buffer;

	if (m->state.state_buffer != NULL && m->state.factor == m->state.state_buffer &&
		(!MODEL_HAS_GRAM(m) || m->state.gram == m->state.state_buffer + packed * m->released.nclasses))
		return;
	buffer = state_store_buffer(m->def.name, model_matrix_doubles(m));
	memcpy(buffer, m->state.factor, sizeof(double) * packed * m->released.nclasses);
	if (MODEL_HAS_GRAM(m))
		memcpy(buffer + packed * m->released.nclasses, m->state.gram, sizeof(double) * packed);
	model_point_matrices(m, buffer);
}

/*
 * The logged part of m's removal state (noise, anchor, per-class spent and
 * C, the bound on lambda_max(K')) and its version.  The matrices come from
 * the state store (catalog_checkout_matrices).
 */
void
catalog_load_state(UnlearnModel *m, bool for_update)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	int			ret;
	bool		isnull;
	int			n;
	int			level = catalog_level();

	args[0] = CStringGetTextDatum(m->def.name);
	ret = execute_kept(psprintf("SELECT noise, anchor, gram_bound, class_spent, xmin, ctid, weight_sum, "
								"%s, %s, %s FROM unlearn.model_state WHERE model = $1%s",
								level >= 3 ? "column_sums" : "NULL::float8[]",
								level >= 4 ? "class_rows" : "NULL::int8[]",
								level >= 14 ? "weights, release_scale" : "NULL::bytea, NULL::float8",
								for_update ? " FOR UPDATE" : ""),
					   1, argtypes, args, NULL, false, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed: %d", ret);
	if (SPI_processed != 1)
		corrupt_model(m, "a ready model has no removal state");
	m->state.noise = doubles_from_bytea(getcol(1, &isnull),
										(Size) m->released.nclasses * m->def.p, m);
	m->state.anchor = doubles_from_bytea(getcol(2, &isnull),
										 (Size) m->released.nclasses * m->def.p, m);
	m->state.gram_bound = DatumGetFloat8(getcol(3, &isnull));
	if (!isfinite(m->state.gram_bound) || m->state.gram_bound < 0)
		corrupt_model(m, "gram_bound is out of range");
	m->state.class_spent = doubles_from_array(getcol(4, &isnull), &n, m);
	if (n != m->released.nclasses)
		corrupt_model(m, "class_spent has the wrong length");
	m->state.weight_sum = doubles_from_array(getcol(7, &isnull), &n, m);
	if (n != m->released.nclasses)
		corrupt_model(m, "weight_sum has the wrong length");
	m->state.column_sums = NULL;
	if (m->def.preprocess == PREPROCESS_STANDARDIZE)
	{
		Datum		sums = getcol(8, &isnull);

		if (isnull)
			corrupt_model(m, "a standardized model has no column sums");
		m->state.column_sums = doubles_from_array(sums, &n, m);
		if (n != column_sum_width(m) * map_columns(m))
			corrupt_model(m, "column_sums has the wrong length");
	}
	m->state.class_rows = NULL;
	if (m->def.loss == LOSS_LOGISTIC)
	{
		Datum		counts = getcol(9, &isnull);

		/* a model trained before 0.4.0 keeps no counts until retrained */
		if (!isnull)
		{
			int64		total = 0;
			int			k;

			m->state.class_rows = counts_from_array(counts, m->released.nlabels, m);
			for (k = 0; k < m->released.nlabels; k++)
				total += m->state.class_rows[k];
			if (total != m->released.rows)
				corrupt_model(m, "the class counts do not add up to the rows");
		}
	}
	/*
	 * fisher: coef as stored is the release w + z; the mechanisms move the
	 * secret w, which replaces it (release_weights publishes it again)
	 */
	m->state.weights = NULL;
	m->state.release_scale = 0.0;
	if (MODEL_HIDES_WEIGHTS(m))
	{
		Size		n = (Size) m->released.nclasses * m->def.p;

		Datum		weights = getcol(10, &isnull);

		if (isnull)
			corrupt_model(m, "a fisher model has no weights in its state");
		m->state.weights = doubles_from_bytea(weights, n, m);
		m->state.release_scale = DatumGetFloat8(getcol(11, &isnull));
		if (isnull || !(isfinite(m->state.release_scale) && m->state.release_scale >= 0))
			corrupt_model(m, "release_scale is out of range");
		m->released.published = m->released.coef;
		m->released.coef = palloc(sizeof(double) * n);
		memcpy(m->released.coef, m->state.weights, sizeof(double) * n);
		m->state.release_changes = m->released.removed + m->released.inserted;
	}
	state_version_from_result(&m->state.version, 5, 6);
	SPI_freetuptable(SPI_tuptable);
	model_point_matrices(m, NULL);
}

/*
 * A private copy of m's matrices at the version just loaded, or NULL
 * factor and gram if that version is not resident: removal.c rebuilds.
 */
void
catalog_checkout_matrices(UnlearnModel *m)
{
	double	   *matrices = state_store_checkout(m->def.name, &m->state.version, model_matrix_doubles(m));

	model_point_matrices(m, matrices);
}

/* the version of name's state row (as the extension: no row security) */
bool
catalog_state_version(const char *name, StateVersion *version)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];

	args[0] = CStringGetTextDatum(name);
	if (execute_kept("SELECT xmin, ctid FROM unlearn.model_state WHERE model = $1",
					 1, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the state of model \"%s\"", name);
	if (SPI_processed != 1)
		return false;
	state_version_from_result(version, 1, 2);
	return true;
}

/* the index of a stored text among names, or XX001 */
static int
stored_choice(UnlearnModel *m, Datum d, const char *const *names, int n, const char *what)
{
	char	   *s = TextDatumGetCString(d);
	int			i;

	for (i = 0; i < n; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	corrupt_model(m, psprintf("unknown %s", what));
	return -1;					/* keep compiler quiet */
}

/*
 * Whether m's catalog row holds a centre and spread: 'none' has none;
 * 'declared' always has them; 'standardize' has them while the model is
 * ready (they are withheld with the weights).
 */
static bool
map_stored(const UnlearnModel *m)
{
	return m->def.preprocess == PREPROCESS_DECLARED ||
		(m->def.preprocess == PREPROCESS_STANDARDIZE && m->released.status == MODEL_READY);
}

/*
 * The column map as stored (map_stored): one finite centre and one
 * positive finite spread per column.
 */
static void
map_from_result(UnlearnModel *m, Datum preprocess, Datum centre, bool centre_null,
				Datum spread, bool spread_null)
{
	int			ncol = map_columns(m);
	int			n,
				c;

	m->def.preprocess = (UnlearnPreprocess) stored_choice(m, preprocess, preprocess_names,
													  lengthof(preprocess_names), "preprocess");
	m->def.centre = m->def.spread = NULL;
	if (!map_stored(m))
		return;
	if (centre_null || spread_null)
		corrupt_model(m, "the column map has no centre or spread");
	m->def.centre = doubles_from_array(centre, &n, m);
	if (n != ncol)
		corrupt_model(m, "centre has the wrong length");
	m->def.spread = doubles_from_array(spread, &n, m);
	if (n != ncol)
		corrupt_model(m, "spread has the wrong length");
	for (c = 0; c < ncol; c++)
		if (!isfinite(m->def.centre[c]) || !(isfinite(m->def.spread[c]) && m->def.spread[c] > 0))
			corrupt_model(m, "the column map is out of range");
}

/*
 * A model's definition from the current SPI row of MODEL_COLUMNS, checked
 * against itself: nothing stored is trusted (only the extension writes the
 * catalog, but a superuser or a damaged page could still change it).
 */
static void
model_from_row(UnlearnModel *m, HeapTuple row, TupleDesc desc)
{
	bool		isnull[51];
	Datum		d[51];
	int			i;
	int			n;
	ArrayType  *types;

	for (i = 1; i <= 51; i++)
	{
		if (i > desc->natts)
		{
			/*
			 * an older catalog (catalog_level): no map, no null policy, no
			 * expressions, the intercept scaling and spread grid of 0.7.0,
			 * or declared classes
			 */
			d[i - 1] = i == 30 ? CStringGetTextDatum(preprocess_names[PREPROCESS_NONE]) :
				i == 33 ? CStringGetTextDatum(nulls_names[0]) :
				i == 36 ? Float8GetDatum(1.0) : i == 37 ? Int32GetDatum(1) :
				i == 38 ? BoolGetDatum(false) :
				i == 39 ? CStringGetTextDatum(removal_names[0]) :
				i == 40 ? CStringGetTextDatum(mechanism_names[0]) :
				i == 41 ? Float8GetDatum(0.0) : i == 45 ? Int32GetDatum(0) :
				i == 47 ? CStringGetTextDatum(noise_names[0]) :
				i == 49 ? Float8GetDatum(0.0) :
				(i >= 42 && i <= 44) ? Int64GetDatum(0) : (Datum) 0;
			isnull[i - 1] = i == 31 || i == 32 || i == 35 || i == 46 || i == 48 || i == 50 || i == 51 ||
				i < 30;
			continue;
		}
		d[i - 1] = heap_getattr(row, i, desc, &isnull[i - 1]);
	}
	/*
	 * every column but classes (9), coef (28), centre, spread, expressions,
	 * cohort, nats and filter is NOT NULL
	 */
	for (i = 0; i < 50; i++)
		if (isnull[i] && i != 8 && i != 27 && i != 30 && i != 31 && i != 34 && i != 45 && i != 47 &&
			i != 49)
			corrupt_model(m, "a required column is null");
	m->def.owner = DatumGetObjectId(d[1]);
	m->def.source = DatumGetObjectId(d[2]);
	m->def.label = TextDatumGetCString(d[3]);
	m->def.features = strings_from_array(d[4], &m->def.nfeatures, m);
	m->def.feature_array = DatumGetBool(d[5]);
	types = DatumGetArrayTypeP(d[6]);
	if (ARR_NDIM(types) != 1 || ARR_HASNULL(types) || ARR_ELEMTYPE(types) != REGTYPEOID ||
		ArrayGetNItems(1, ARR_DIMS(types)) != m->def.nfeatures + 1)
		corrupt_model(m, "column_types does not match the feature list");
	m->def.column_types = palloc(sizeof(Oid) * (m->def.nfeatures + 1));
	memcpy(m->def.column_types, ARR_DATA_PTR(types), sizeof(Oid) * (m->def.nfeatures + 1));
	m->def.loss = (UnlearnLoss) stored_choice(m, d[7], loss_names, lengthof(loss_names), "loss");
	if (!isnull[8])
		m->released.classes = strings_from_array(d[8], &m->released.nlabels, m);
	m->released.status = (ModelStatus) stored_choice(m, d[28], status_names, lengthof(status_names), "state");
	/* a classifier that releases no weights may have fewer than two labels left */
	if (m->def.loss == LOSS_SQUARED ? m->released.classes != NULL :
		(m->released.classes == NULL || m->released.nlabels > UNLEARN_MAX_CLASSES ||
		 m->released.nlabels < (m->released.status == MODEL_READY ? 2 : 0)))
		corrupt_model(m, "the class list does not fit the loss");
	m->def.classes_declared = DatumGetBool(d[37]);
	{
		int			removal = stored_choice(m, d[38], removal_names, lengthof(removal_names), "removal");

		m->def.deferred = removal >= 1;
		m->def.async_apply = removal == 2;
	}
	if (m->def.classes_declared && (m->def.loss != LOSS_LOGISTIC || m->released.nlabels < 2))
		corrupt_model(m, "declared classes need a classifier with two classes or more");
	m->released.nclasses = (m->released.nlabels > 2) ? m->released.nlabels : 1;
	m->def.dims = DatumGetInt32(d[9]);
	if (m->def.dims <= 0 || m->def.dims > UNLEARN_MAX_DIMS ||
		(!m->def.feature_array && m->def.dims != m->def.nfeatures) ||
		(m->def.feature_array && m->def.nfeatures != 1))
		corrupt_model(m, "dims does not match the feature list");
	m->def.intercept = DatumGetBool(d[10]);
	m->def.p = m->def.dims + (m->def.intercept ? 1 : 0);
	m->def.scale = DatumGetFloat8(d[11]);
	m->def.intercept_scaling = DatumGetFloat8(d[35]);
	m->def.spread_steps = DatumGetInt32(d[36]);
	if (!(m->def.intercept_scaling >= 1.0 && m->def.intercept_scaling <= MAX_INTERCEPT_SCALING) ||
		m->def.spread_steps < 1 || m->def.spread_steps > MAX_SPREAD_STEPS)
		corrupt_model(m, "the intercept scaling or the spread grid is out of range");
	m->released.rows = DatumGetInt64(d[12]);
	m->released.trained_rows = DatumGetInt64(d[13]);
	m->released.removed = DatumGetInt64(d[14]);
	m->released.inserted = DatumGetInt64(d[15]);
	m->released.retrains = DatumGetInt32(d[16]);
	m->def.lambda = DatumGetFloat8(d[17]);
	m->def.reg = DatumGetFloat8(d[18]);
	m->def.sigma = DatumGetFloat8(d[19]);
	m->def.epsilon = DatumGetFloat8(d[20]);
	m->def.delta = DatumGetFloat8(d[21]);
	m->def.budget = DatumGetFloat8(d[22]);
	m->released.spent = DatumGetFloat8(d[23]);
	if (!(isfinite(m->def.scale) && m->def.scale > 0) ||
		m->released.rows < 0 || m->released.trained_rows < 0 ||
		!(isfinite(m->def.lambda) && m->def.lambda > 0) ||
		!(isfinite(m->def.reg) && m->def.reg > 0) ||
		!(isfinite(m->def.sigma) && m->def.sigma >= 0) ||
		!(isfinite(m->def.epsilon) && m->def.epsilon > 0) ||
		!(m->def.delta > 0 && m->def.delta < 1) ||
		!(isfinite(m->def.budget) && m->def.budget >= 0) ||
		!(isfinite(m->released.spent) && m->released.spent >= 0))
		corrupt_model(m, "a parameter is out of range");
	m->def.bound = (UnlearnBound) stored_choice(m, d[24], bound_names, lengthof(bound_names), "bound");
	m->def.retrain_on_exhausted = stored_choice(m, d[25], exhausted_names, lengthof(exhausted_names),
											"on_exhausted") == 1;
	m->def.per_row_steps = stored_choice(m, d[26], steps_names, lengthof(steps_names), "steps") == 1;
	if (m->released.status == MODEL_READY)
	{
		if (isnull[27])
			corrupt_model(m, "a ready model has no coefficients");
		m->released.coef = doubles_from_array(d[27], &n, m);
		if (n != m->released.nclasses * m->def.p)
			corrupt_model(m, "coef has the wrong length");
	}
	else
		m->released.coef = palloc0(sizeof(double) * m->released.nclasses * m->def.p);
	map_from_result(m, d[29], d[30], isnull[30], d[31], isnull[31]);
	m->def.nulls = (UnlearnNulls) stored_choice(m, d[32], nulls_names, lengthof(nulls_names), "nulls");
	m->released.skipped = DatumGetInt64(d[33]);
	if (m->released.skipped < 0)
		corrupt_model(m, "skipped is out of range");
	m->def.is_expression = NULL;
	if (!isnull[34])
	{
		ArrayType  *flags = DatumGetArrayTypeP(d[34]);

		if (ARR_NDIM(flags) != 1 || ARR_HASNULL(flags) || ARR_ELEMTYPE(flags) != BOOLOID ||
			ArrayGetNItems(1, ARR_DIMS(flags)) != m->def.nfeatures)
			corrupt_model(m, "expressions does not match the feature list");
		m->def.is_expression = palloc(sizeof(bool) * m->def.nfeatures);
		memcpy(m->def.is_expression, ARR_DATA_PTR(flags), sizeof(bool) * m->def.nfeatures);
	}
	m->def.mechanism = (UnlearnMechanism) stored_choice(m, d[39], mechanism_names,
														lengthof(mechanism_names), "mechanism");
	m->def.step_size = DatumGetFloat8(d[40]);
	m->def.training_steps = DatumGetInt64(d[41]);
	m->released.gd_steps = DatumGetInt64(d[42]);
	m->released.fewest_rows = DatumGetInt64(d[43]);
	m->def.given_parameters = DatumGetInt32(d[44]);
	if (m->def.given_parameters < 0 || m->def.given_parameters > 7)
		corrupt_model(m, "given_parameters is out of range");
	if (m->def.mechanism == MECHANISM_NOISY_GD &&
		(m->def.loss != LOSS_LOGISTIC || m->released.nclasses != 1 ||
		 !(isfinite(m->def.step_size) && m->def.step_size > 0 &&
		   m->def.step_size <= noisy_gd_largest_step(m->def.lambda)) ||
		 !(m->def.sigma > 0) || m->def.training_steps < 0 || m->released.gd_steps < 0 ||
		 m->released.fewest_rows < 0 || m->released.fewest_rows > m->released.trained_rows ||
		 m->def.training_steps > NOISY_GD_MAX_TRAINING_STEPS ||
		 m->def.given_parameters < 0 || m->def.given_parameters > 7 ||
		 (m->released.status == MODEL_READY && m->released.fewest_rows < 1)))
		corrupt_model(m, "the Noisy-GD parameters are out of range");
	m->def.noise = (UnlearnNoise) stored_choice(m, d[46], noise_names, lengthof(noise_names), "noise");
	m->def.nats = isnull[47] ? 0.0 : DatumGetFloat8(d[47]);
	m->released.nats_spent = DatumGetFloat8(d[48]);
	if ((m->def.mechanism == MECHANISM_FISHER) != !isnull[47] ||
		(m->def.mechanism == MECHANISM_FISHER &&
		 (!(m->def.nats > 0 && m->def.nats <= UNLEARN_MAX_NATS) || m->def.sigma != 0.0 ||
		  m->def.noise != NOISE_GAUSSIAN ||
		  m->def.budget != objective_budget(m))) ||
		!(isfinite(m->released.nats_spent) && m->released.nats_spent >= 0) ||
		(m->def.noise == NOISE_LAPLACE && m->def.mechanism != MECHANISM_NEWTON))
		corrupt_model(m, "the noise or nats are out of range");
	m->def.cohort = isnull[45] ? NULL : TextDatumGetCString(d[45]);
	m->def.filter = isnull[49] ? NULL : TextDatumGetCString(d[49]);
	m->def.taken_columns = NULL;
	m->def.ntaken = 0;
	if (!isnull[50])
	{
		m->def.taken_columns = strings_from_array(d[50], &m->def.ntaken, m);
		if (m->def.ntaken > m->def.nfeatures || m->def.feature_array || m->def.deferred ||
			m->def.preprocess != PREPROCESS_STANDARDIZE || m->def.mechanism == MECHANISM_NOISY_GD)
			corrupt_model(m, "taken_categories does not match the model");
	}
	if (m->def.cohort != NULL &&
		(m->def.mechanism == MECHANISM_NOISY_GD ||
		 (m->def.loss == LOSS_LOGISTIC && m->def.bound != BOUND_TAYLOR)))
		corrupt_model(m, "a cohort column needs a Newton model (taylor bound for a classifier)");
}

static void
report_missing_model(const char *name)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("model \"%s\" does not exist", name),
			 errhint("See SELECT model FROM unlearn.models for the models there are.")));
}

static UnlearnModel *load_model_row(const char *name, bool with_state, bool for_update,
									bool missing_ok, MemoryContext row_cxt, HeapTuple *row,
									TupleDesc *row_desc);

UnlearnModel *
catalog_load_model(const char *name, bool with_state, bool for_update, bool missing_ok)
{
	return load_model_row(name, with_state, for_update, missing_ok, NULL, NULL, NULL);
}

/*
 * catalog_load_model(name, false, false, true), with a copy of the
 * model's catalog row and its descriptor in cxt, for
 * catalog_model_from_row to decode again while the row is unchanged
 */
UnlearnModel *
catalog_load_model_keeping_row(const char *name, MemoryContext cxt, HeapTuple *row,
							   TupleDesc *desc)
{
	return load_model_row(name, false, false, true, cxt, row, desc);
}

/* the definition a kept catalog row holds, checked as catalog_load_model checks it */
UnlearnModel *
catalog_model_from_row(const char *name, HeapTuple row, TupleDesc desc)
{
	UnlearnModel *m = palloc0(sizeof(UnlearnModel));

	m->def.name = pstrdup(name);
	model_from_row(m, row, desc);
	return m;
}

static UnlearnModel *
load_model_row(const char *name, bool with_state, bool for_update, bool missing_ok,
			   MemoryContext row_cxt, HeapTuple *row, TupleDesc *row_desc)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	int			ret;
	UnlearnModel *m;
	int			level = catalog_level();

	args[0] = CStringGetTextDatum(name);
	ret = execute_kept(psprintf("SELECT " MODEL_COLUMNS "%s%s%s%s%s%s%s%s%s%s FROM unlearn.models WHERE model = $1%s",
										 level >= 3 ? MAP_COLUMNS : "",
										 level >= 4 ? NULLS_COLUMNS : "",
										 level >= 6 ? EXPRESSIONS_COLUMN : "",
										 level >= 7 ? MAP_GRID_COLUMNS : "",
										 level >= 8 ? DECLARED_CLASSES_COLUMN : "",
										 level >= 10 ? REMOVAL_COLUMN : "",
										 level >= 12 ? MECHANISM_COLUMNS : "",
										 level >= 13 ? COHORT_COLUMN : "",
										 level >= 14 ? NOISE_COLUMNS : "",
										 level >= 16 ? TAKEN_COLUMN : "",
										 for_update ? " FOR NO KEY UPDATE" : ""),
					   1, argtypes, args, NULL, false, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed: %d", ret);
	if (SPI_processed == 0)
	{
		if (missing_ok)
			return NULL;
		report_missing_model(name);
	}

	if (row_cxt != NULL)
	{
		/* kept by the caller, in its own context, with the definition */
		MemoryContext old = MemoryContextSwitchTo(row_cxt);

		/* its long values fetched now, not at each decoding */
		*row = toast_flatten_tuple(SPI_tuptable->vals[0], SPI_tuptable->tupdesc);
		*row_desc = CreateTupleDescCopy(SPI_tuptable->tupdesc);
		MemoryContextSwitchTo(old);
	}
	m = palloc0(sizeof(UnlearnModel));
	m->def.name = pstrdup(name);
	model_from_row(m, SPI_tuptable->vals[0], SPI_tuptable->tupdesc);
	if (with_state)
		catalog_load_model_state(m, for_update);
	return m;
}

/*
 * The state of a model loaded without it, as catalog_load_model loads it
 * with: a ready model's, unless it keeps none (Noisy-GD: nothing but w is
 * computed from the rows).
 */
void
catalog_load_model_state(UnlearnModel *m, bool for_update)
{
	if (m->released.status == MODEL_READY && MODEL_KEEPS_STATE(m))
		catalog_load_state(m, for_update);
}

/*
 * Who owns a model and what it is trained on, without reading (or
 * checking) the rest of its definition: enough to drop or replace a model
 * whose stored definition is corrupt.  Returns false if it does not exist
 * (and missing_ok).
 */
bool
catalog_model_identity(const char *name, bool for_update, bool missing_ok, Oid *owner,
					   Oid *source)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	bool		isnull;

	args[0] = CStringGetTextDatum(name);
	if (SPI_execute_with_args(for_update ?
							  "SELECT owner::pg_catalog.oid, source::pg_catalog.oid FROM unlearn.models WHERE model = $1 FOR NO KEY UPDATE" :
							  "SELECT owner::pg_catalog.oid, source::pg_catalog.oid FROM unlearn.models WHERE model = $1",
							  1, argtypes, args, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read model \"%s\"", name);
	if (SPI_processed == 0)
	{
		if (!missing_ok)
			report_missing_model(name);
		return false;
	}
	*owner = DatumGetObjectId(getcol(1, &isnull));
	*source = DatumGetObjectId(getcol(2, &isnull));
	return true;
}

/*
 * A model whose stored definition failed its checks during a change of
 * its table: the change goes on, and the model withholds its weights and
 * drops its state until it is dropped or replaced.
 */
void
catalog_quarantine_model(const char *name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];

	state_store_forget(name);
	args[0] = CStringGetTextDatum(name);
	if (SPI_execute_with_args("UPDATE unlearn.models SET state = 'suspended', coef = NULL, "
							  "updated_at = pg_catalog.clock_timestamp() WHERE model = $1",
							  1, argtypes, args, NULL, false, 0) != SPI_OK_UPDATE ||
		SPI_execute_with_args("DELETE FROM unlearn.model_state WHERE model = $1",
							  1, argtypes, args, NULL, false, 0) != SPI_OK_DELETE ||
		(catalog_has_cohorts() &&
		 SPI_execute_with_args("DELETE FROM unlearn.cohorts WHERE model = $1",
							   1, argtypes, args, NULL, false, 0) != SPI_OK_DELETE) ||
		SPI_execute_with_args("INSERT INTO unlearn.ledger (model, owner, operation, spent) "
							  "SELECT model, owner, 'quarantine', 0 FROM unlearn.models WHERE model = $1",
							  1, argtypes, args, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not suspend model \"%s\"", name);
}

/*
 * Lock a model's catalog row (missing: nothing to lock).  Every lock that
 * serialises a model's changes is FOR NO KEY UPDATE: it excludes the
 * others, and not the FOR KEY SHARE of the foreign keys that reference the
 * model (its grants and cohorts).
 */
void
catalog_lock_model(const char *name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];

	args[0] = CStringGetTextDatum(name);
	if (execute_kept("SELECT 1 FROM unlearn.models WHERE model = $1 FOR NO KEY UPDATE",
					 1, argtypes, args, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not lock model \"%s\"", name);
}

/*
 * Does role hold a grant on model name through one of its grantees' roles?
 * A 'read' grant covers 'monitor'.  Read with a fresh snapshot, like the
 * model itself (catalog_load_model): a model loaded and then checked was
 * read while the grant held, even in a query that began before a revoke.
 */
bool
catalog_model_granted(const char *name, Oid role, bool weights)
{
	Oid			argtypes[2] = {TEXTOID, BOOLOID};
	Datum		args[2];
	uint64		i;

	if (!catalog_has_grants())
		return false;
	args[0] = CStringGetTextDatum(name);
	args[1] = BoolGetDatum(weights);
	if (SPI_execute_with_args("SELECT grantee::pg_catalog.oid FROM unlearn.model_grants "
							  "WHERE model = $1 AND (privilege = 'read' OR NOT $2)",
							  2, argtypes, args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the grants of model \"%s\"", name);
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Oid			grantee = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
															 SPI_tuptable->tupdesc, 1, &isnull));

		if (!isnull && has_privs_of_role(role, grantee))
			return true;
	}
	return false;
}

/*
 * Whether the catalog row of model name was written by the current
 * transaction (or one of its subtransactions): a change of it not yet
 * committed.
 */
bool
catalog_model_written_here(const char *name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	bool		isnull;
	bool		here = false;

	args[0] = CStringGetTextDatum(name);
	if (execute_kept("SELECT xmin FROM unlearn.models WHERE model = $1",
					 1, argtypes, args, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read model \"%s\"", name);
	if (SPI_processed == 1)
	{
		Datum		xmin = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		here = !isnull && TransactionIdIsCurrentTransactionId(DatumGetTransactionId(xmin));
	}
	SPI_freetuptable(SPI_tuptable);
	return here;
}

/*
 * Record or take back a grant; false if it was already there (grant) or
 * not there (revoke).
 */
bool
catalog_set_grant(const char *name, Oid owner, Oid grantee, const char *privilege, bool grant)
{
	Oid			argtypes[4] = {TEXTOID, OIDOID, OIDOID, TEXTOID};
	Datum		args[4];
	int			ret;

	args[0] = CStringGetTextDatum(name);
	args[1] = ObjectIdGetDatum(owner);
	args[2] = ObjectIdGetDatum(grantee);
	args[3] = CStringGetTextDatum(privilege);
	if (grant)
		ret = SPI_execute_with_args("INSERT INTO unlearn.model_grants (model, owner, grantee, privilege) "
									"VALUES ($1, $2::pg_catalog.regrole, $3::pg_catalog.regrole, $4) "
									"ON CONFLICT DO NOTHING",
									4, argtypes, args, NULL, false, 0);
	else
		ret = SPI_execute_with_args("DELETE FROM unlearn.model_grants "
									"WHERE model = $1 AND grantee = $3::pg_catalog.regrole AND privilege = $4",
									4, argtypes, args, NULL, false, 0);
	if (ret != (grant ? SPI_OK_INSERT : SPI_OK_DELETE))
		elog(ERROR, "could not write the grants of model \"%s\"", name);
	return SPI_processed > 0;
}

/*
 * The ready models whose spent budget is at least share times eps' (all
 * ready models if every), in name order: the maintenance worker's
 * candidates.  The list is in the caller's memory context.
 */
List *
catalog_ready_models(double share, bool every)
{
	Oid			argtypes[2] = {FLOAT8OID, BOOLOID};
	Datum		args[2];
	MemoryContext cxt = CurrentMemoryContext;

	args[0] = Float8GetDatum(share);
	args[1] = BoolGetDatum(every);
	/*
	 * Noisy-GD models have nothing to re-anchor or rebuild; a model with a
	 * queue is re-anchored and rebuilt by the apply that consumes it (the
	 * table differs from the model by the queue, which the apply's rows
	 * bring back: rebuild_matrices)
	 */
	if (SPI_execute_with_args(psprintf("SELECT model FROM unlearn.models WHERE state = 'ready' "
									   "AND ($2 OR (budget > 0 AND spent >= $1 * budget))%s%s ORDER BY model",
									   catalog_level() >= 12 ? " AND mechanism <> 'noisy_gd'" : "",
									   catalog_level() >= 10 ? " AND removal = 'immediate'" : ""),
							  2, argtypes, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not list the models");
	return result_names(cxt);
}

/*
 * beta as name's last re-anchoring or training left it (its measured
 * residual), from the ledger; 0 if none is recorded.
 */
double
catalog_measured_spent(const char *name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	bool		isnull;

	args[0] = CStringGetTextDatum(name);
	if (execute_kept("SELECT spent FROM unlearn.ledger WHERE model = $1 "
					 "AND (reanchored OR retrained) ORDER BY id DESC LIMIT 1",
					 1, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the ledger of model \"%s\"", name);
	if (SPI_processed != 1)
		return 0.0;
	return DatumGetFloat8(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * The mean bound per changed row of a model's statements that neither
 * retrained nor re-anchored (its ledger, under this owner), or NaN when it
 * has none.
 */
double
catalog_mean_bound_per_row(const char *name, Oid owner)
{
	Oid			argtypes[2] = {TEXTOID, OIDOID};
	Datum		args[2];
	bool		isnull;
	Datum		mean;

	args[0] = CStringGetTextDatum(name);
	args[1] = ObjectIdGetDatum(owner);
	if (execute_kept("SELECT pg_catalog.sum(bound) / NULLIF(pg_catalog.sum(rows_removed + rows_added), 0)::float8 "
					 "FROM unlearn.ledger WHERE model = $1 AND owner = $2 "
					 "AND NOT retrained AND NOT reanchored",
					 2, argtypes, args, NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read the ledger of model \"%s\"", name);
	mean = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? NAN : DatumGetFloat8(mean);
}

/*
 * The ModelRefs a query over unlearn.models gives for table relid ($1),
 * each row's model, owner and whether it is deferred or async
 */
static List *
model_refs_of_query(const char *sql, Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1];
	List	   *out = NIL;
	uint64		i;

	args[0] = ObjectIdGetDatum(relid);
	if (execute_kept(sql, 1, argtypes, args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not list the models of a table");
	for (i = 0; i < SPI_processed; i++)
	{
		ModelRef   *ref = palloc(sizeof(ModelRef));
		bool		isnull;

		ref->name = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		ref->owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
													SPI_tuptable->tupdesc, 2, &isnull));
		ref->deferred = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[i],
												   SPI_tuptable->tupdesc, 3, &isnull));
		out = lappend(out, ref);
	}
	return out;
}

/* a copy of refs (of ModelRef), names included, in the current memory context */
List *
model_refs_copy(const List *refs)
{
	List	   *out = NIL;
	ListCell   *lc;

	foreach(lc, refs)
	{
		ModelRef   *ref = palloc(sizeof(ModelRef));

		*ref = *(ModelRef *) lfirst(lc);
		ref->name = pstrdup(ref->name);
		out = lappend(out, ref);
	}
	return out;
}

/* The models trained on relid with their owners, in name order (the lock order). */
List *
catalog_models_of_relation(Oid relid)
{
	return model_refs_of_query(catalog_level() >= 10 ?
							   "SELECT model, owner::oid, removal IN ('deferred', 'async') "
							   "FROM unlearn.models WHERE source = $1 ORDER BY model" :
							   "SELECT model, owner::oid, false "
							   "FROM unlearn.models WHERE source = $1 ORDER BY model", relid);
}

/*
 * The models trained on relid whose changes its statements apply (not
 * deferred or async), each locked as catalog_lock_model locks it, in name
 * order (the lock order: the rows are locked as they leave the sort), in
 * one query.
 */
List *
catalog_lock_immediate_models(Oid relid)
{
	return model_refs_of_query(catalog_level() >= 10 ?
							   "SELECT model, owner::oid, false FROM unlearn.models "
							   "WHERE source = $1 AND NOT coalesce(removal IN ('deferred', 'async'), false) "
							   "ORDER BY model FOR NO KEY UPDATE" :
							   "SELECT model, owner::oid, false FROM unlearn.models "
							   "WHERE source = $1 ORDER BY model FOR NO KEY UPDATE", relid);
}

const char *
model_status_name(ModelStatus status)
{
	return status_names[status];
}

/* centre and spread as stored: NULL unless map_stored */
static void
map_datums(UnlearnModel *m, Datum *v, char *nulls)
{
	if (m->def.centre != NULL && map_stored(m))
	{
		v[0] = float8_array(m->def.centre, map_columns(m));
		v[1] = float8_array(m->def.spread, map_columns(m));
		nulls[0] = nulls[1] = ' ';
	}
	else
	{
		v[0] = v[1] = (Datum) 0;
		nulls[0] = nulls[1] = 'n';
	}
}

/* column_types as stored: one type per feature, then the label's */
static Datum
column_types_array(UnlearnModel *m)
{
	Datum	   *types = palloc(sizeof(Datum) * (m->def.nfeatures + 1));
	int			i;

	for (i = 0; i <= m->def.nfeatures; i++)
		types[i] = ObjectIdGetDatum(m->def.column_types[i]);
	return PointerGetDatum(construct_array(types, m->def.nfeatures + 1, OIDOID, sizeof(Oid), true,
										   TYPALIGN_INT));
}

/* expressions as stored: one flag per feature (m->def.is_expression non-NULL) */
static Datum
expressions_array(UnlearnModel *m)
{
	Datum	   *flags = palloc(sizeof(Datum) * m->def.nfeatures);
	int			i;

	for (i = 0; i < m->def.nfeatures; i++)
		flags[i] = BoolGetDatum(m->def.is_expression[i]);
	return PointerGetDatum(construct_array(flags, m->def.nfeatures, BOOLOID, 1, true, TYPALIGN_CHAR));
}

/*
 * Write the features of a model that takes categories from its rows (a
 * training may change them): features, expressions, column_types, dims
 * and taken_categories.
 */
void
catalog_write_features(UnlearnModel *m)
{
	Oid			types[6] = {TEXTOID, TEXTARRAYOID, BOOLARRAYOID, OIDARRAYOID, INT4OID, TEXTARRAYOID};
	Datum		v[6];
	char		nulls[7] = "      ";

	if (catalog_level() < 16)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the installed catalog of unlearn predates categories taken from the rows"),
				 errhint("Run ALTER EXTENSION unlearn UPDATE first.")));
	v[0] = CStringGetTextDatum(m->def.name);
	v[1] = cstring_text_array(m->def.features, m->def.nfeatures);
	v[2] = m->def.is_expression != NULL ? expressions_array(m) : (Datum) 0;
	if (m->def.is_expression == NULL)
		nulls[2] = 'n';
	v[3] = column_types_array(m);
	v[4] = Int32GetDatum(m->def.dims);
	v[5] = cstring_text_array(m->def.taken_columns, m->def.ntaken);
	if (execute_kept("UPDATE unlearn.models SET features = $2, expressions = $3, "
					 "column_types = $4::regtype[], dims = $5, taken_categories = $6 WHERE model = $1",
					 6, types, v, nulls, false, 0) != SPI_OK_UPDATE || SPI_processed != 1)
		elog(ERROR, "could not write the features of model \"%s\"", m->def.name);
}

void
catalog_insert_model(UnlearnModel *m)
{
	Oid			types[50] = {TEXTOID, OIDOID, OIDOID, TEXTOID, TEXTARRAYOID, BOOLOID,
		OIDARRAYOID, TEXTOID, TEXTARRAYOID, INT4OID, BOOLOID, FLOAT8OID, INT8OID,
		INT8OID, INT8OID, INT8OID, INT4OID, FLOAT8OID, FLOAT8OID, FLOAT8OID,
		FLOAT8OID, FLOAT8OID, FLOAT8OID, FLOAT8OID, TEXTOID, TEXTOID, TEXTOID,
	FLOAT8ARRAYOID, TEXTOID, TEXTOID, FLOAT8ARRAYOID, FLOAT8ARRAYOID, TEXTOID, INT8OID, BOOLARRAYOID,
	FLOAT8OID, INT4OID, BOOLOID, TEXTOID, TEXTOID, FLOAT8OID, INT8OID, INT8OID, INT8OID, INT4OID, TEXTOID,
	TEXTOID, FLOAT8OID, FLOAT8OID, TEXTOID};
	Datum		v[50];
	char		nulls[51];
	int			level = catalog_level();
	int			ret;

	memset(nulls, ' ', sizeof(nulls));
	nulls[50] = '\0';
	release_weights(m);

	/* a new model starts with an empty queue, whatever was queued under its name */
	catalog_clear_queue(m->def.name);
	v[0] = CStringGetTextDatum(m->def.name);
	v[1] = ObjectIdGetDatum(m->def.owner);
	v[2] = ObjectIdGetDatum(m->def.source);
	v[3] = CStringGetTextDatum(m->def.label);
	v[4] = cstring_text_array(m->def.features, m->def.nfeatures);
	v[5] = BoolGetDatum(m->def.feature_array);
	v[6] = column_types_array(m);
	v[7] = CStringGetTextDatum(loss_names[m->def.loss]);
	if (m->released.classes)
		v[8] = cstring_text_array(m->released.classes, m->released.nlabels);
	else
	{
		v[8] = (Datum) 0;
		nulls[8] = 'n';
	}
	v[9] = Int32GetDatum(m->def.dims);
	v[10] = BoolGetDatum(m->def.intercept);
	v[11] = Float8GetDatum(m->def.scale);
	v[12] = Int64GetDatum(m->released.rows);
	v[13] = Int64GetDatum(m->released.trained_rows);
	v[14] = Int64GetDatum(m->released.removed);
	v[15] = Int64GetDatum(m->released.inserted);
	v[16] = Int32GetDatum(m->released.retrains);
	v[17] = Float8GetDatum(m->def.lambda);
	v[18] = Float8GetDatum(m->def.reg);
	v[19] = Float8GetDatum(m->def.sigma);
	v[20] = Float8GetDatum(m->def.epsilon);
	v[21] = Float8GetDatum(m->def.delta);
	v[22] = Float8GetDatum(m->def.budget);
	v[23] = Float8GetDatum(m->released.spent);
	v[24] = CStringGetTextDatum(bound_names[m->def.bound]);
	v[25] = CStringGetTextDatum(exhausted_names[m->def.retrain_on_exhausted ? 1 : 0]);
	v[26] = CStringGetTextDatum(steps_names[m->def.per_row_steps ? 1 : 0]);
	v[27] = coef_array(m->released.published, m->released.nclasses, m->def.p);
	v[28] = CStringGetTextDatum(model_status_name(MODEL_READY));
	v[29] = CStringGetTextDatum(preprocess_names[m->def.preprocess]);
	map_datums(m, &v[30], &nulls[30]);
	v[32] = CStringGetTextDatum(nulls_names[m->def.nulls]);
	v[33] = Int64GetDatum(m->released.skipped);
	if (m->def.is_expression != NULL)
		v[34] = expressions_array(m);
	else
	{
		v[34] = (Datum) 0;
		nulls[34] = 'n';
	}
	v[35] = Float8GetDatum(m->def.intercept_scaling);
	v[36] = Int32GetDatum(m->def.spread_steps);
	v[37] = BoolGetDatum(m->def.classes_declared);
	v[38] = CStringGetTextDatum(removal_names[m->def.async_apply ? 2 : m->def.deferred ? 1 : 0]);
	v[39] = CStringGetTextDatum(mechanism_names[m->def.mechanism]);
	v[40] = Float8GetDatum(m->def.step_size);
	v[41] = Int64GetDatum(m->def.training_steps);
	v[42] = Int64GetDatum(m->released.gd_steps);
	v[43] = Int64GetDatum(m->released.fewest_rows);
	v[44] = Int32GetDatum(m->def.given_parameters);
	v[45] = m->def.cohort != NULL ? CStringGetTextDatum(m->def.cohort) : (Datum) 0;
	if (m->def.cohort == NULL)
		nulls[45] = 'n';
	v[46] = CStringGetTextDatum(noise_names[m->def.noise]);
	v[47] = Float8GetDatum(m->def.nats);
	if (m->def.mechanism != MECHANISM_FISHER)
		nulls[47] = 'n';
	v[48] = Float8GetDatum(m->released.nats_spent);
	v[49] = m->def.filter != NULL ? CStringGetTextDatum(m->def.filter) : (Datum) 0;
	if (m->def.filter == NULL)
		nulls[49] = 'n';
	if ((m->def.mechanism == MECHANISM_FISHER || m->def.noise != NOISE_GAUSSIAN ||
		 m->def.filter != NULL) && level < 14)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the installed catalog of unlearn predates %s",
						m->def.filter != NULL ? "row filters" :
						m->def.noise != NOISE_GAUSSIAN ? "noise \"laplace\"" : "the mechanism \"fisher\""),
				 errhint("Run ALTER EXTENSION unlearn UPDATE first.")));
	if (m->def.cohort != NULL && level < 13)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the installed catalog of unlearn predates cohorts"),
				 errhint("Run ALTER EXTENSION unlearn UPDATE first.")));
	if (m->def.mechanism != MECHANISM_NEWTON && level < 12)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the installed catalog of unlearn predates the mechanism \"%s\"",
						mechanism_names[m->def.mechanism]),
				 errhint("Run ALTER EXTENSION unlearn UPDATE first.")));

	ret = SPI_execute_with_args(psprintf("INSERT INTO unlearn.models (" MODEL_COLUMNS "%s%s%s%s%s%s%s%s%s, trained_at, updated_at) "
										 "VALUES ($1, $2, $3, $4, $5, $6, $7::regtype[], $8, $9, $10, $11, $12, $13, $14, "
										 "$15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, "
										 "%s%s%s%s%s%s%s%s%sclock_timestamp(), clock_timestamp())",
										 level >= 3 ? MAP_COLUMNS : "", level >= 4 ? NULLS_COLUMNS : "",
										 level >= 6 ? EXPRESSIONS_COLUMN : "",
										 level >= 7 ? MAP_GRID_COLUMNS : "",
										 level >= 8 ? DECLARED_CLASSES_COLUMN : "",
										 level >= 10 ? REMOVAL_COLUMN : "",
										 level >= 12 ? MECHANISM_COLUMNS : "",
										 level >= 13 ? COHORT_COLUMN : "",
										 level >= 14 ? NOISE_COLUMNS : "",
										 level >= 3 ? "$30, $31, $32, " : "", level >= 4 ? "$33, $34, " : "",
										 level >= 6 ? "$35, " : "", level >= 7 ? "$36, $37, " : "",
										 level >= 8 ? "$38, " : "", level >= 10 ? "$39, " : "",
										 level >= 12 ? "$40, $41, $42, $43, $44, $45, " : "",
										 level >= 13 ? "$46, " : "",
										 level >= 14 ? "$47, $48, $49, $50, " : ""),
								level >= 14 ? 50 : level >= 13 ? 46 : level >= 12 ? 45 : level >= 10 ? 39 : level >= 8 ? 38 : level >= 7 ? 37 : level >= 6 ? 35 : level >= 4 ? 34 :
								level >= 3 ? 32 : 29,
								types, v, nulls, false, 0);
	if (ret != SPI_OK_INSERT)
		elog(ERROR, "could not insert model: %d", ret);
	if (m->def.ntaken > 0)
		catalog_write_features(m);
	/* the state rows follow; Noisy-GD keeps none */
	if (MODEL_KEEPS_STATE(m))
		write_state(m, true);
}

/*
 * Write the logged state and stage the matrices under the new version of
 * the state row (state_store.c publishes them at commit).  noise and
 * anchor are rewritten only after a (re)training or re-anchoring, so a
 * removal leaves their TOAST values in place.
 */
static void
write_state(UnlearnModel *m, bool full)
{
	Oid			types[12] = {TEXTOID, FLOAT8ARRAYOID, FLOAT8OID, FLOAT8ARRAYOID, BYTEAOID, BYTEAOID, OIDOID,
	FLOAT8ARRAYOID, INT8ARRAYOID, BYTEAOID, FLOAT8OID, TIDOID};
	Datum		v[12];
	char		nulls[13] = "            ";
	const char *sums;
	bool		fisher = MODEL_HIDES_WEIGHTS(m);
	int			level = catalog_level();
	int			ret;

	gather_matrices(m);
	v[0] = CStringGetTextDatum(m->def.name);
	v[1] = float8_array(m->state.class_spent, m->released.nclasses);
	v[2] = Float8GetDatum(m->state.gram_bound);
	v[3] = float8_array(m->state.weight_sum, m->released.nclasses);
	/* noise and anchor only when they are written: not on a plain removal */
	v[4] = full ?
		bytea_from_doubles(m->state.noise, (Size) m->released.nclasses * m->def.p) : (Datum) 0;
	v[5] = (full || m->call.anchor_changed) ?
		bytea_from_doubles(m->state.anchor, (Size) m->released.nclasses * m->def.p) : (Datum) 0;
	v[6] = ObjectIdGetDatum(m->def.owner);
	if (m->state.column_sums != NULL)
		v[7] = float8_array(m->state.column_sums, column_sum_width(m) * map_columns(m));
	else
	{
		v[7] = (Datum) 0;
		nulls[7] = 'n';
	}
	if (m->state.class_rows != NULL)
		v[8] = int8_array(m->state.class_rows, m->released.nlabels);
	else
	{
		v[8] = (Datum) 0;
		nulls[8] = 'n';
	}
	/* fisher: the secret w and the scale of its release's noise */
	if (fisher)
	{
		v[9] = bytea_from_doubles(m->released.coef, (Size) m->released.nclasses * m->def.p);
		v[10] = Float8GetDatum(m->state.release_scale);
	}
	else
	{
		v[9] = v[10] = (Datum) 0;
		nulls[9] = nulls[10] = 'n';
	}
	sums = level >= 14 ? ", column_sums = $8, class_rows = $9, weights = $10, release_scale = $11" :
		level >= 4 ? ", column_sums = $8, class_rows = $9" :
		level >= 3 ? ", column_sums = $8" : "";
	if (full)
		ret = execute_kept(psprintf("INSERT INTO unlearn.model_state AS s "
									"(model, class_spent, gram_bound, weight_sum, noise, anchor, owner%s) "
									"VALUES ($1, $2, $3, $4, $5, $6, $7%s) "
									"ON CONFLICT (model) DO UPDATE SET class_spent = $2, gram_bound = $3, "
									"weight_sum = $4, noise = $5, anchor = $6, owner = $7%s "
									"RETURNING xmin, ctid",
									level >= 14 ? ", column_sums, class_rows, weights, release_scale" :
									level >= 4 ? ", column_sums, class_rows" :
									level >= 3 ? ", column_sums" : "",
									level >= 14 ? ", $8, $9, $10, $11" :
									level >= 4 ? ", $8, $9" : level >= 3 ? ", $8" : "", sums),
						   11, types, v, nulls, false, 0);
	else
	{
		/*
		 * the row version this transaction loaded and locked, found by its
		 * ctid (a TID scan: a busy model's state leaves many versions behind
		 * before VACUUM, which a scan by name would read)
		 */
		const char *set = psprintf("UPDATE unlearn.model_state SET class_spent = $2, gram_bound = $3, "
								   "weight_sum = $4%s%s WHERE model = $1",
								   m->call.anchor_changed ? ", anchor = $6" : "", sums);
		bool		found = false;

		v[11] = PointerGetDatum(&m->state.version.ctid);
		nulls[4] = 'n';
		if (!m->call.anchor_changed)
			nulls[5] = 'n';
		if (ItemPointerIsValid(&m->state.version.ctid))
		{
			/*
			 * planned as a TID scan whatever the table's statistics say:
			 * after a VACUUM it looks one page long, which a sequential
			 * scan would beat, until its versions fill it again
			 */
			int			level = NewGUCNestLevel();

			(void) set_config_option("enable_seqscan", "off", PGC_USERSET, PGC_S_SESSION,
									 GUC_ACTION_SAVE, true, 0, false);
			ret = execute_kept(psprintf("%s AND ctid = $12 RETURNING xmin, ctid", set),
							   12, types, v, nulls, false, 0);
			AtEOXact_GUC(true, level);
			found = ret != SPI_OK_UPDATE_RETURNING || SPI_processed != 0;
		}
		/* not the version loaded: the row by its name, as it is now */
		if (!found)
			ret = execute_kept(psprintf("%s RETURNING xmin, ctid", set), 11, types, v, nulls, false, 0);
	}
	if ((ret != SPI_OK_INSERT_RETURNING && ret != SPI_OK_UPDATE_RETURNING) || SPI_processed != 1)
		elog(ERROR, "could not write the state of model \"%s\": %d", m->def.name, ret);
	state_version_from_result(&m->state.version, 1, 2);
	SPI_freetuptable(SPI_tuptable);
	state_store_stage(m->def.name, m->state.state_buffer, &m->state.version);
}

/* m->call.retrained_now makes write_state rewrite noise and anchor too */
void
catalog_update_model(UnlearnModel *m)
{
	Oid			types[24] = {TEXTOID, FLOAT8OID, INT8OID, INT8OID, INT8OID, INT8OID,
		INT4OID, FLOAT8OID, FLOAT8OID, FLOAT8OID, FLOAT8ARRAYOID, BOOLOID, INT4OID, TEXTOID,
		FLOAT8ARRAYOID, FLOAT8ARRAYOID, INT8OID, TEXTARRAYOID, FLOAT8OID, FLOAT8OID, INT8OID,
	INT8OID, INT8OID, FLOAT8OID};
	Datum		v[24];
	char		nulls[25] = "                        ";
	int			level = catalog_level();
	int			ret;

	release_weights(m);
	v[0] = CStringGetTextDatum(m->def.name);
	v[1] = Float8GetDatum(m->def.scale);
	v[2] = Int64GetDatum(m->released.rows);
	v[3] = Int64GetDatum(m->released.trained_rows);
	v[4] = Int64GetDatum(m->released.removed);
	v[5] = Int64GetDatum(m->released.inserted);
	v[6] = Int32GetDatum(m->released.retrains);
	v[7] = Float8GetDatum(m->def.reg);
	v[8] = Float8GetDatum(m->def.budget);
	v[9] = Float8GetDatum(m->released.spent);
	v[10] = coef_array(m->released.published, m->released.nclasses, m->def.p);
	v[11] = BoolGetDatum(m->call.retrained_now);
	v[12] = Int32GetDatum(m->call.reanchors_now);
	v[13] = CStringGetTextDatum(model_status_name(m->released.status));
	if (m->released.status != MODEL_READY)
		nulls[10] = 'n';
	map_datums(m, &v[14], &nulls[14]);
	v[16] = Int64GetDatum(m->released.skipped);
	if (m->released.classes != NULL)
		v[17] = cstring_text_array(m->released.classes, m->released.nlabels);
	else
	{
		v[17] = (Datum) 0;
		nulls[17] = 'n';
	}
	v[18] = Float8GetDatum(m->def.sigma);
	v[19] = Float8GetDatum(m->def.step_size);
	v[20] = Int64GetDatum(m->def.training_steps);
	v[21] = Int64GetDatum(m->released.gd_steps);
	v[22] = Int64GetDatum(m->released.fewest_rows);
	v[23] = Float8GetDatum(m->released.nats_spent);
	/* undeclared classes follow the rows (removal.c): a retrain may change them */
	ret = execute_kept(psprintf("UPDATE unlearn.models SET scale = $2, rows = $3, trained_rows = $4, "
								"removed = $5, inserted = $6, retrains = $7, reg = $8, budget = $9, "
								"spent = $10, coef = $11, updated_at = clock_timestamp(), "
								"trained_at = CASE WHEN $12 THEN clock_timestamp() ELSE trained_at END, "
								"reanchors = reanchors + $13, state = $14%s%s%s%s "
								"WHERE model = $1",
								level >= 3 ? ", centre = $15, spread = $16" : "",
								level >= 4 ? ", skipped = $17, classes = $18" : "",
								level >= 12 ? ", sigma = $19, step_size = $20, training_steps = $21, "
								"gd_steps = $22, fewest_rows = $23" : "",
								level >= 14 ? ", nats_spent = $24" : ""),
					   24, types, v, nulls, false, 0);
	if (ret != SPI_OK_UPDATE || SPI_processed != 1)
		elog(ERROR, "could not update model \"%s\"", m->def.name);
	if (m->call.features_retaken)
		catalog_write_features(m);
	if (m->call.retrained_now && m->def.deferred)
	{
		catalog_clear_queue(m->def.name);
		if (m->def.async_apply && citus_distribution(m->def.source) == 'h')
			citus_clear_queue(m->def.name, m->def.source);
	}
	if (m->released.status == MODEL_READY && MODEL_KEEPS_STATE(m))
		write_state(m, m->call.retrained_now);
	else
	{
		/* nothing released, nothing kept: the state goes with its rows */
		state_store_forget(m->def.name);
		ret = SPI_execute_with_args("DELETE FROM unlearn.model_state WHERE model = $1",
									1, types, v, NULL, false, 0);
		if (ret != SPI_OK_DELETE)
			elog(ERROR, "could not delete the state of model \"%s\"", m->def.name);
		if (m->def.cohort != NULL)
			cohort_store_clear(m->def.name);
	}
}

/* add delta to the rows a model leaves out for a null */
void
catalog_count_skipped(const char *name, int64 delta)
{
	Oid			argtypes[2] = {TEXTOID, INT8OID};
	Datum		args[2];

	args[0] = CStringGetTextDatum(name);
	args[1] = Int64GetDatum(delta);
	if (execute_kept("UPDATE unlearn.models SET skipped = skipped + $2 WHERE model = $1",
					 2, argtypes, args, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not count the skipped rows of model \"%s\"", name);
}

void
catalog_delete_model(const char *name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	int			ret;

	state_store_forget(name);
	catalog_clear_queue(name);
	args[0] = CStringGetTextDatum(name);
	ret = SPI_execute_with_args("DELETE FROM unlearn.models WHERE model = $1",
								1, argtypes, args, NULL, false, 0);
	if (ret != SPI_OK_DELETE)
		elog(ERROR, "could not delete model \"%s\": %d", name, ret);
}

void
catalog_ledger(UnlearnModel *m, const char *operation, int64 removed, int64 added,
			   double bound, bool retrained)
{
	Oid			types[10] = {TEXTOID, OIDOID, TEXTOID, INT8OID, INT8OID, FLOAT8OID, FLOAT8OID, BOOLOID,
	BOOLOID, FLOAT8OID};
	Datum		v[10];
	char		nulls[11] = "          ";
	int			level;
	int			ret;

	v[0] = CStringGetTextDatum(m->def.name);
	v[1] = ObjectIdGetDatum(m->def.owner);
	v[2] = CStringGetTextDatum(operation);
	v[3] = Int64GetDatum(removed);
	v[4] = Int64GetDatum(added);
	v[5] = Float8GetDatum(bound);
	v[6] = Float8GetDatum(m->released.spent);
	v[7] = BoolGetDatum(retrained);
	v[8] = BoolGetDatum(m->call.reanchors_now > 0);
	/*
	 * a fisher release's KL bound goes on the first line written after it,
	 * other than a rebuild's (which publishes nothing new)
	 */
	v[9] = Float8GetDatum(Max(m->call.release_nats, 0.0));
	if (m->def.mechanism != MECHANISM_FISHER || m->call.release_nats < 0 ||
		strcmp(operation, "rebuild") == 0)
		nulls[9] = 'n';
	else
		m->call.release_nats = -1.0;
	level = catalog_level();
	ret = execute_kept(psprintf("INSERT INTO unlearn.ledger (model, owner, operation, rows_removed, "
								"rows_added, bound, spent, retrained, reanchored%s) "
								"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9%s)",
								level >= 14 ? ", nats" : "", level >= 14 ? ", $10" : ""),
					   10, types, v, nulls, false, 0);
	if (ret != SPI_OK_INSERT)
		elog(ERROR, "could not write ledger: %d", ret);
}

/* --- triggers on trained tables ----------------------------------------- */

static bool
relation_has_trigger(Oid relid, const char *name)
{
	return OidIsValid(get_trigger_oid(relid, name, true));
}

/* which removals the models of a table use */
static void
removal_kinds(Oid relid, bool *immediate, bool *deferred)
{
	List	   *refs = catalog_models_of_relation(relid);
	ListCell   *lc;

	*immediate = *deferred = false;
	foreach(lc, refs)
	{
		if (((ModelRef *) lfirst(lc))->deferred)
			*deferred = true;
		else
			*immediate = true;
	}
}

/*
 * A partition tree with a foreign table cannot take a model with
 * immediate removal: PostgreSQL collects no transition rows from a
 * foreign table, and refuses a statement through the root that would
 * need them.  Checked at training and whenever the partitions change.
 */
void
refuse_foreign_partitions(Oid relid)
{
	List	   *tree = find_all_inheritors(relid, AccessShareLock, NULL);
	ListCell   *lc;

	foreach(lc, tree)
		if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_FOREIGN_TABLE)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("table \"%s\" cannot have a model with immediate removal: it has foreign partition \"%s\"",
							get_rel_name(relid), get_rel_name(lfirst_oid(lc))),
					 errdetail("The statement triggers of immediate removal cannot collect the rows of a foreign table."),
					 errhint("Train the table's models with options => '{\"removal\": \"deferred\"}', and apply their queued changes with unlearn_apply_pending().")));
}

/*
 * The triggers of a trained table follow the removal of its models.
 * Immediate models need five statement triggers on the table and on each
 * of its partitions (statement triggers fire only on the table a
 * statement names): the BEFORE trigger locks the models before the
 * statement locks rows, and one AFTER trigger per event collects its
 * transition table (trigger.c).  Deferred models need one AFTER row
 * trigger on the table, which PostgreSQL clones to every partition, now
 * and later, foreign ones included, and the TRUNCATE guard on the table
 * and its partitions but foreign ones (which take no TRUNCATE trigger).
 * All are ENABLE ALWAYS, so that session_replication_role = replica does
 * not silence them.  A foreign partition cannot collect transition rows,
 * so a tree with one takes deferred models only.
 */
void
catalog_attach_triggers(Oid relid)
{
	List	   *tree = find_all_inheritors(relid, AccessShareLock, NULL);
	bool		immediate;
	bool		deferred;
	ListCell   *lc;

	/* a distributed table's models have their shards' triggers (citus_queue.c) */
	if (citus_distribution(relid) == 'h')
		return;
	removal_kinds(relid, &immediate, &deferred);
	if (immediate)
		refuse_foreign_partitions(relid);
	foreach(lc, tree)
	{
		Oid			rel_oid = lfirst_oid(lc);
		char	   *rel = relation_qualified_name(rel_oid);
		bool		foreign = get_rel_relkind(rel_oid) == RELKIND_FOREIGN_TABLE;
		StringInfoData q;

		initStringInfo(&q);
		if (immediate && !relation_has_trigger(rel_oid, "unlearn_after_delete"))
			appendStringInfo(&q,
							 "CREATE TRIGGER unlearn_before_write BEFORE INSERT OR UPDATE OR DELETE ON %s "
							 "FOR EACH STATEMENT EXECUTE FUNCTION unlearn._maintain();"
							 "CREATE TRIGGER unlearn_after_delete AFTER DELETE ON %s "
							 "REFERENCING OLD TABLE AS unlearn_old FOR EACH STATEMENT "
							 "EXECUTE FUNCTION unlearn._maintain();"
							 "CREATE TRIGGER unlearn_after_insert AFTER INSERT ON %s "
							 "REFERENCING NEW TABLE AS unlearn_new FOR EACH STATEMENT "
							 "EXECUTE FUNCTION unlearn._maintain();"
							 "CREATE TRIGGER unlearn_after_update AFTER UPDATE ON %s "
							 "REFERENCING OLD TABLE AS unlearn_old NEW TABLE AS unlearn_new "
							 "FOR EACH STATEMENT EXECUTE FUNCTION unlearn._maintain();"
							 "ALTER TABLE %s ENABLE ALWAYS TRIGGER unlearn_before_write, "
							 "ENABLE ALWAYS TRIGGER unlearn_after_delete, "
							 "ENABLE ALWAYS TRIGGER unlearn_after_insert, "
							 "ENABLE ALWAYS TRIGGER unlearn_after_update;",
							 rel, rel, rel, rel, rel);
		if (!foreign && !relation_has_trigger(rel_oid, "unlearn_before_truncate"))
			appendStringInfo(&q,
							 "CREATE TRIGGER unlearn_before_truncate BEFORE TRUNCATE ON %s "
							 "FOR EACH STATEMENT EXECUTE FUNCTION unlearn._forbid_truncate();"
							 "ALTER TABLE %s ENABLE ALWAYS TRIGGER unlearn_before_truncate;",
							 rel, rel);
		/* on the root only: partitions get a clone, kept enabled like it */
		if (deferred && rel_oid == relid && !relation_has_trigger(rel_oid, "unlearn_after_row"))
			appendStringInfo(&q,
							 "CREATE TRIGGER unlearn_after_row AFTER INSERT OR UPDATE OR DELETE ON %s "
							 "FOR EACH ROW EXECUTE FUNCTION unlearn._defer();"
							 "ALTER TABLE %s ENABLE ALWAYS TRIGGER unlearn_after_row;",
							 rel, rel);
		if (q.len > 0)
			run_trigger_ddl(list_make1(q.data), rel);
	}
}

/* drop the triggers the table's remaining models do not need */
void
catalog_detach_triggers_if_unused(Oid relid)
{
	List	   *tree;
	bool		immediate;
	bool		deferred;
	ListCell   *lc;

	if (get_rel_name(relid) == NULL || citus_distribution(relid) == 'h')
		return;
	removal_kinds(relid, &immediate, &deferred);
	tree = find_all_inheritors(relid, AccessShareLock, NULL);
	foreach(lc, tree)
	{
		Oid			rel_oid = lfirst_oid(lc);
		char	   *rel = relation_qualified_name(rel_oid);
		StringInfoData q;

		static const char *const statement_triggers[] = {"unlearn_before_write",
			"unlearn_after_delete", "unlearn_after_insert", "unlearn_after_update"};
		int			i;

		initStringInfo(&q);
		for (i = 0; i < lengthof(statement_triggers) && !immediate; i++)
			if (relation_has_trigger(rel_oid, statement_triggers[i]))
				appendStringInfo(&q, "DROP TRIGGER %s ON %s;", statement_triggers[i], rel);
		if (!immediate && !deferred && relation_has_trigger(rel_oid, "unlearn_before_truncate"))
			appendStringInfo(&q, "DROP TRIGGER unlearn_before_truncate ON %s;", rel);
		/* the root's drop takes the partitions' clones with it */
		if (!deferred && rel_oid == relid && relation_has_trigger(rel_oid, "unlearn_after_row"))
			appendStringInfo(&q, "DROP TRIGGER unlearn_after_row ON %s;", rel);
		if (q.len > 0)
			run_trigger_ddl(list_make1(q.data), rel);
	}
}

/* record the current partitions of a trained table with its models */
void
catalog_set_partitions(Oid relid)
{
	Oid			types[2] = {OIDOID, OIDARRAYOID};
	Datum		v[2];
	int			n;

	v[0] = ObjectIdGetDatum(relid);
	v[1] = partition_set(relid, &n);
	if (SPI_execute_with_args("UPDATE unlearn.models SET partitions = $2::pg_catalog.regclass[] WHERE source = $1",
							  2, types, v, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not record the partitions of %s", relation_qualified_name(relid));
}

/* the partitions of relid (every level), sorted, as stored in models.partitions */
Datum
partition_set(Oid relid, int *count)
{
	List	   *tree = find_all_inheritors(relid, AccessShareLock, NULL);
	Datum	   *d = palloc(sizeof(Datum) * Max(list_length(tree), 1));
	Oid		   *oids = palloc(sizeof(Oid) * Max(list_length(tree), 1));
	ListCell   *lc;
	int			n = 0;
	int			i;

	foreach(lc, tree)
		if (lfirst_oid(lc) != relid)
			oids[n++] = lfirst_oid(lc);
	qsort(oids, n, sizeof(Oid), oid_cmp);
	for (i = 0; i < n; i++)
		d[i] = ObjectIdGetDatum(oids[i]);
	*count = n;
	return PointerGetDatum(construct_array(d, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT));
}

/* whether row changes are queued for a model */
bool
catalog_has_queued_changes(const char *name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	bool		isnull;

	if (!catalog_has_deferred_removal())
		return false;
	args[0] = CStringGetTextDatum(name);
	if (execute_kept("SELECT EXISTS (SELECT 1 FROM unlearn.pending WHERE model = $1)",
					 1, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the queue of model \"%s\"", name);
	return DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/* a retrained model reflects its table: its queue is spent */
void
catalog_clear_queue(const char *name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];

	if (!catalog_has_deferred_removal())
		return;
	args[0] = CStringGetTextDatum(name);
	if (execute_kept("DELETE FROM unlearn.pending WHERE model = $1",
					 1, argtypes, args, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not clear the queue of model \"%s\"", name);
}
