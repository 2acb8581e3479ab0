/*-------------------------------------------------------------------------
 *
 * unlearn.c
 *	  Module entry and the model lifecycle: train, retrain, drop.
 *
 * Training takes a SHARE lock on the source table: concurrent writers wait
 * until the new model is committed (and its triggers in place), so no row
 * can change between the training snapshot and the first removal.
 *
 *-------------------------------------------------------------------------
 */
#include "api/api.h"

#include <math.h>

#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(unlearn_train);
PG_FUNCTION_INFO_V1(unlearn_retrain);
PG_FUNCTION_INFO_V1(unlearn_drop);

void		_PG_init(void);

void
_PG_init(void)
{
	state_store_init();
	catalog_generation_init();
	progress_init();
	linalg_init();
	runtime_check_blas();
	removal_init();
	cohorts_init();
	noisy_gd_init();
	trigger_init();
	writing_statements_init();
	worker_init();
}

static const char *const train_argnames[] = {
	"model", "source", "label", "features", "loss", "lambda", "sigma", "epsilon",
	"delta", "intercept", "bound", "on_exhausted", "steps", "replace", "verbose",
	"preprocess", "centre", "spread", "nulls", "classes", "removal", "mechanism",
	"noise", "step_size", "training_steps"
};

/*
 * What Noisy-GD's guarantee allows: it covers what the noisy steps
 * release, so nothing else may be computed from the rows (a centre and
 * spread, taken classes), and its accountant is for one binary logistic
 * model.
 */
static void
check_noisy_gd_choices(UnlearnModel *m)
{
	const char *what = NULL;
	const char *hint = NULL;

	if (m->def.loss != LOSS_LOGISTIC)
	{
		what = "loss \"squared\"";
		hint = "Noisy-GD needs a Lipschitz loss: use loss => 'logistic'.";
	}
	else if (m->def.preprocess == PREPROCESS_STANDARDIZE)
	{
		what = "preprocess \"standardize\"";
		hint = "A centre and spread computed from the rows would be released without noise: pass options => '{\"preprocess\": \"none\"}', or declare them.";
	}
	if (what != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("mechanism \"noisy_gd\" does not support %s", what),
				 errhint("%s", hint)));
}

/*
 * noise 'laplace' is the objective noise of a Newton model; a fisher model
 * trains without objective noise (sigma is ignored) and aims at nats per
 * release (argument 27 of unlearn._train; NULL: 1).
 */
static void
fisher_choices(FunctionCallInfo fcinfo, UnlearnModel *m)
{
	bool		nats_given = PG_NARGS() > 27 && !PG_ARGISNULL(27);

	if (m->def.noise == NOISE_LAPLACE && m->def.mechanism != MECHANISM_NEWTON)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("noise \"laplace\" applies to mechanism \"newton\" only"),
				 errhint("It is the objective noise b of a Newton model; leave noise out for \"%s\".",
						 m->def.mechanism == MECHANISM_FISHER ? "fisher" : "noisy_gd")));
	if (m->def.mechanism != MECHANISM_FISHER)
	{
		if (nats_given)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("nats applies to mechanism \"fisher\" only"),
					 errhint("Pass mechanism => 'fisher', or leave nats out.")));
		return;
	}
	m->def.nats = nats_given ? PG_GETARG_FLOAT8(27) : 1.0;
	if (!(m->def.nats > 0.0 && m->def.nats <= UNLEARN_MAX_NATS))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("nats must be greater than 0 and at most %g", UNLEARN_MAX_NATS),
				 errhint("nats bounds what each release leaves about the rows forgotten before it; 1 is the default.")));
	m->def.sigma = 0.0;
}

/*
 * The Noisy-GD parameters given as options (arguments 22 to 24 of
 * unlearn._train), each kept by every training of the model; their
 * combination with epsilon and the rows is checked by noisy_gd_choose.
 */
static void
given_noisy_gd_parameters(FunctionCallInfo fcinfo, UnlearnModel *m)
{
	static const struct
	{
		const char *name;
		int			flag;
	}			given[3] = {
		{"noise", GIVEN_NOISE}, {"step_size", GIVEN_STEP_SIZE}, {"training_steps", GIVEN_TRAINING_STEPS}
	};
	int			i;

	for (i = 0; i < 3; i++)
	{
		bool		steps = given[i].flag == GIVEN_TRAINING_STEPS;
		double		v;

		if (PG_NARGS() <= 22 + i || PG_ARGISNULL(22 + i))
			continue;
		if (m->def.mechanism != MECHANISM_NOISY_GD)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"%s\" applies to mechanism \"noisy_gd\" only", given[i].name),
					 errhint("Pass mechanism => 'noisy_gd', or leave the option out.")));
		v = PG_GETARG_FLOAT8(22 + i);
		if (!(isfinite(v) && v > 0) ||
			(steps && (v != floor(v) || v > (double) NOISY_GD_MAX_TRAINING_STEPS)))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"%s\" must be a positive %s", given[i].name,
							steps ? "whole number of steps, at most 100000" : "finite number"),
					 errhint("Leave it out to have it chosen from epsilon, delta, lambda and the rows.")));
		if (given[i].flag == GIVEN_NOISE)
			m->def.sigma = v;
		else if (given[i].flag == GIVEN_STEP_SIZE)
			m->def.step_size = v;
		else
			m->def.training_steps = (int64) v;
		m->def.given_parameters |= given[i].flag;
	}
}

/*
 * A classifier's declared classes (arr), or for a boolean label with
 * none declared its type's two values, into m->released.classes as the
 * canonical texts rows would have (rows.c).  retrain_model puts them in the
 * label type's order.  Without arr, other labels leave the classes to the
 * rows.
 */
static void
declare_classes(UnlearnModel *m, ArrayType *arr)
{
	Oid			label_type = m->def.column_types[m->def.nfeatures];
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			i,
				k;

	if (arr == NULL)
	{
		if (m->def.loss == LOSS_LOGISTIC && getBaseType(label_type) == BOOLOID &&
			catalog_has_declared_classes())
		{
			m->released.nlabels = 2;
			m->released.classes = palloc(sizeof(char *) * 2);
			m->released.classes[0] = pstrdup("false");
			m->released.classes[1] = pstrdup("true");
			m->def.classes_declared = true;
		}
		return;
	}
	if (m->def.loss != LOSS_LOGISTIC)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("classes are for classifiers: model \"%s\" has squared loss", m->def.name),
				 errhint("Leave classes out, or train with loss => 'logistic'.")));
	if (!catalog_has_declared_classes())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("declared classes need version 0.9.0 of the unlearn catalog"),
				 errhint("Run ALTER EXTENSION unlearn UPDATE.")));
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("classes must be a one-dimensional array")));
	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	if (n < 2 || n > UNLEARN_MAX_CLASSES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("classes must name 2 to %d labels, not %d", UNLEARN_MAX_CLASSES, n),
				 errhint("Declare every label the rows may have, or leave classes out to take them from the rows.")));
	m->released.classes = palloc(sizeof(char *) * n);
	for (i = 0; i < n; i++)
	{
		double		value;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("classes must not contain a null"),
					 errhint("A row with a null label is refused, or skipped under options => '{\"nulls\": \"skip\"}'.")));
		m->released.classes[i] = label_from_text(label_type, TextDatumGetCString(elems[i]), &value);
		for (k = 0; k < i; k++)
			if (strcmp(m->released.classes[k], m->released.classes[i]) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("classes must name each label once"),
						 errdetail("Elements %d and %d are the same value of the type of label column \"%s\".",
								   k + 1, i + 1, m->def.label)));
	}
	m->released.nlabels = n;
	m->def.classes_declared = true;
}

/* the i-th feature column's declared centre or spread, checked */
static double *
declared_map(UnlearnModel *m, ArrayType *arr, const char *what, bool positive)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			c;
	double	   *out;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a one-dimensional array", what)));
	deconstruct_array(arr, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &elems, &nulls, &n);
	if (n != map_columns(m))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s has %d elements, but model \"%s\" has %d feature columns",
						what, n, m->def.name, map_columns(m)),
				 errhint("Give one value per feature column, in the order of features; an array column takes one value for all its elements.")));
	out = palloc(sizeof(double) * n);
	for (c = 0; c < n; c++)
	{
		out[c] = nulls[c] ? NAN : DatumGetFloat8(elems[c]);
		if (!isfinite(out[c]) || (positive && !(out[c] > 0)))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s of feature column %d must be a finite number%s",
							what, c + 1, positive ? " > 0" : ""),
					 errhint("Declare the column's centre and its spread (for example its mean and standard deviation) in its own units.")));
	}
	return out;
}

static void
require_choice(const char *what, const char *value, const char *a, const char *b,
			   const char *c)
{
	if (strcmp(value, a) == 0 || strcmp(value, b) == 0 || (c && strcmp(value, c) == 0))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown %s \"%s\"", what, value),
			 c ? errhint("Use '%s', '%s' or '%s'.", a, b, c) : errhint("Use '%s' or '%s'.", a, b)));
}

static void
require_finite(const char *what, double v, double min, bool min_inclusive)
{
	if (isnan(v) || isinf(v) || v < min || (!min_inclusive && v == min))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a finite number %s %g", what, min_inclusive ? ">=" : ">", min)));
}

/*
 * How Citus distributes relid (citus_distribution): '\0' for a table it
 * does not manage.  A distributed table's rows live in shards, whose
 * writes fire the shards' triggers, not the table's.
 */
static char
distribution_of(Oid relid)
{
	char		method;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	method = citus_distribution(relid);
	if (method == '\0' && citus_is_shard(relid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot train a model on \"%s\", a shard of a distributed table", get_rel_name(relid)),
				 errhint("Train on the distributed table, on Citus's coordinator.")));
	if (method != '\0' && !citus_is_coordinator())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a model of table \"%s\" is trained on Citus's coordinator", get_rel_name(relid)),
				 errdetail("The coordinator keeps the models and applies the queues of distributed tables."),
				 errhint("Connect to the coordinator and train there.")));
	if (method == 'h')
		citus_check_distribution_column(relid);
	SPI_finish();
	return method;
}

/*
 * Tables a model can be trained on, and kept exact; true for a table that
 * Citus distributes by hash, whose models must be async (citus_queue.c).
 */
static bool
check_source_table(Oid relid, bool deferred, bool async)
{
	char		relkind = get_rel_relkind(relid);
	char		method;
	const char *name = get_rel_name(relid);

	if (name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", name),
				 errhint("Models are trained on tables, whose triggers keep them in step.")));
	if (get_rel_persistence(relid) == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot train a model on temporary table \"%s\"", name),
				 errdetail("A temporary table goes with its session, without telling its models."),
				 errhint("Train on a permanent or unlogged table.")));
	if (get_rel_relispartition(relid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot train a model on partition \"%s\"", name),
				 errhint("Train on the partitioned table at the root; its models follow every partition.")));
	if (relkind == RELKIND_RELATION && (has_subclass(relid) || has_superclass(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot train a model on table \"%s\", which takes part in inheritance", name),
				 errdetail("Writes to an inheritance child do not reach triggers on its parent."),
				 errhint("Use declarative partitioning, or train on a table without inheritance.")));
	method = distribution_of(relid);
	if (method != '\0' && method != 'h')
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot train a model on table \"%s\", which Citus manages", name),
				 errdetail("Its rows live in shards or copies that are not distributed by hash, whose writes no model could follow."),
				 errhint("Train on a table that Citus distributes by hash (create_distributed_table), or on a local table.")));
	if (method == 'h' && relkind == RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot train a model on distributed partitioned table \"%s\"", name),
				 errdetail("Its partitions' shards would queue changes under their own names."),
				 errhint("Train on a distributed table that is not partitioned.")));
	/*
	 * Citus refuses, in one transaction, DDL on a table's shards by one role
	 * and reads of them by another: the shard triggers are attached, and the
	 * queue consumed, as the extension's owner, and the rows read as the
	 * table's owner (privilege.c), so these must be one role.
	 */
	if (method == 'h' && table_owner(relid) != extension_owner())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a model of distributed table \"%s\" needs the table to be owned by %s, the extension's owner",
						name, GetUserNameFromId(extension_owner(), false)),
				 errdetail("Citus does not let one transaction change a table's shards as one role and read them as another."),
				 errhint("ALTER TABLE %s OWNER TO %s, and grant the roles that use it what they need.",
						 quote_identifier(name), quote_identifier(GetUserNameFromId(extension_owner(), false)))));
	if (method == 'h' && !async)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a model of distributed table \"%s\" needs \"removal\": \"async\"", name),
				 errdetail("The table's rows change on the workers, whose triggers queue the changes for the coordinator to apply."),
				 errhint("Pass options => '{\"removal\": \"async\"}'.")));
	if (!deferred)
		refuse_foreign_partitions(relid);
	return method == 'h';
}

/*
 * A model of a distributed table is kept by its shards' triggers, which
 * decode rows without the catalog (shard_trigger.c): plain columns only,
 * every row of the table, and classes only those a boolean label has.
 */
static void
check_citus_model(UnlearnModel *m)
{
	const char *what = NULL;
	int			j;

	for (j = 0; j < m->def.nfeatures && what == NULL; j++)
		if (feature_is_expression(m, j))
			what = "feature expressions";
	if (m->def.filter != NULL)
		what = "a row filter";
	else if (m->def.cohort != NULL)
		what = "cohorts";
	else if (m->def.classes_declared &&
			 getBaseType(m->def.column_types[m->def.nfeatures]) != BOOLOID)
		what = "declared classes";
	if (what != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a model of distributed table \"%s\" cannot have %s",
						get_rel_name(m->def.source), what),
				 errdetail("The shards' triggers decode plain columns only, without the model's catalog."),
				 errhint("Train on plain numeric, boolean or array columns, with a boolean label if its classes must be fixed.")));
}

static Datum training_summary(FunctionCallInfo fcinfo, UnlearnModel *m, TimestampTz started);

Datum
unlearn_train(PG_FUNCTION_ARGS)
{
	UnlearnModel *m;
	UnlearnModel *old;
	char	   *bound,
			   *on_exhausted,
			   *steps,
			   *preprocess,
			   *nulls,
			   *removal,
			   *mechanism,
			   *noise,
			   *loss;
	bool		distributed;
	Oid			relid;
	bool		replace;
	bool		verbose;
	int			reports;
	int			i;
	ExtensionContext ctx;
	TimestampTz started = GetCurrentTimestamp();
	Datum		summary;

	state_store_require();
	/*
	 * the 0.1.0 and 0.2.0 catalogs call with 15 arguments and have no map;
	 * the 0.3.0 catalog calls with 18 and has no null policy; those before
	 * 0.9.0 call with 19 and declare no classes
	 */
	for (i = 0; i < Min(PG_NARGS(), lengthof(train_argnames)); i++)
		if (PG_ARGISNULL(i) && i != 16 && i != 17 && i != 19 && i < 22)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("argument \"%s\" of unlearn_train must not be null", train_argnames[i])));

	m = palloc0(sizeof(UnlearnModel));
	m->def.name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	relid = PG_GETARG_OID(1);
	m->def.label = text_to_cstring(PG_GETARG_TEXT_PP(2));
	loss = text_to_cstring(PG_GETARG_TEXT_PP(4));
	m->def.lambda = PG_GETARG_FLOAT8(5);
	m->def.sigma = PG_GETARG_FLOAT8(6);
	m->def.epsilon = PG_GETARG_FLOAT8(7);
	m->def.delta = PG_GETARG_FLOAT8(8);
	m->def.intercept = PG_GETARG_BOOL(9);
	bound = text_to_cstring(PG_GETARG_TEXT_PP(10));
	on_exhausted = text_to_cstring(PG_GETARG_TEXT_PP(11));
	steps = text_to_cstring(PG_GETARG_TEXT_PP(12));
	replace = PG_GETARG_BOOL(13);
	verbose = PG_GETARG_BOOL(14);
	preprocess = PG_NARGS() > 15 ? text_to_cstring(PG_GETARG_TEXT_PP(15)) : "none";
	nulls = PG_NARGS() > 18 ? text_to_cstring(PG_GETARG_TEXT_PP(18)) : "error";
	removal = PG_NARGS() > 20 ? text_to_cstring(PG_GETARG_TEXT_PP(20)) : "immediate";
	mechanism = PG_NARGS() > 21 ? text_to_cstring(PG_GETARG_TEXT_PP(21)) : "newton";
	noise = PG_NARGS() > 26 && !PG_ARGISNULL(26) ? text_to_cstring(PG_GETARG_TEXT_PP(26)) : "gaussian";

	if (m->def.name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model name must not be empty")));
	if (strlen(m->def.name) > UNLEARN_MAX_NAME)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("model name is longer than %d bytes", UNLEARN_MAX_NAME),
				 errhint("Choose a shorter name: the catalog indexes it.")));
	require_choice("loss", loss, "logistic", "squared", NULL);
	require_choice("bound", bound, "guo", "taylor", "exact");
	if (strcmp(on_exhausted, "error") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("on_exhausted policy \"error\" is not supported"),
				 errdetail("Erasure is never refused because of a model."),
				 errhint("Use 'suspend': the model then withholds its weights until unlearn_retrain().")));
	require_choice("on_exhausted policy", on_exhausted, "retrain", "suspend", NULL);
	require_choice("steps", steps, "row", "statement", NULL);
	require_choice("preprocess", preprocess, "standardize", "declared", "none");
	require_choice("nulls", nulls, "error", "skip", "impute");
	require_choice("removal", removal, "immediate", "deferred", "async");
	if (strcmp(removal, "async") == 0 && !catalog_has_async_removal())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("\"removal\": \"async\" needs version 0.21.0 of the unlearn catalog"),
				 errhint("Run ALTER EXTENSION unlearn UPDATE.")));
	require_choice("mechanism", mechanism, "newton", "noisy_gd", "fisher");
	require_choice("noise", noise, "gaussian", "laplace", NULL);
	if (PG_NARGS() > 15 &&
		(PG_ARGISNULL(16) != PG_ARGISNULL(17) ||
		 (strcmp(preprocess, "declared") == 0) != !PG_ARGISNULL(16)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("centre and spread go together, with preprocess \"declared\""),
				 errhint("Pass options => '{\"preprocess\": \"declared\", \"centre\": [...], \"spread\": [...]}', or none of them.")));
	require_finite("lambda", m->def.lambda, 0.0, false);
	if (m->def.lambda > UNLEARN_MAX_LAMBDA)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lambda must be at most %g", UNLEARN_MAX_LAMBDA),
				 errdetail("The regulariser is lambda times the number of rows, which must stay far from overflow.")));
	require_finite("sigma", m->def.sigma, 0.0, true);
	require_finite("epsilon", m->def.epsilon, 0.0, false);
	if (!(m->def.delta > 0.0 && m->def.delta < 1.0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("delta must be between 0 and 1, exclusive")));
	distributed = check_source_table(relid, strcmp(removal, "immediate") != 0,
									 strcmp(removal, "async") == 0);
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_STATE),
				 errmsg("unlearn_train cannot run under REPEATABLE READ or SERIALIZABLE"),
				 errdetail("Its snapshot would predate its lock on the table, and rows committed in between would be missing from the model."),
				 errhint("Train in a READ COMMITTED transaction.")));

	m->def.loss = strcmp(loss, "squared") == 0 ? LOSS_SQUARED : LOSS_LOGISTIC;
	m->def.bound = strcmp(bound, "guo") == 0 ? BOUND_GUO :
		strcmp(bound, "exact") == 0 ? BOUND_EXACT : BOUND_TAYLOR;
	m->def.retrain_on_exhausted = strcmp(on_exhausted, "retrain") == 0;
	m->def.per_row_steps = strcmp(steps, "row") == 0;
	m->def.preprocess = strcmp(preprocess, "standardize") == 0 ? PREPROCESS_STANDARDIZE :
		strcmp(preprocess, "declared") == 0 ? PREPROCESS_DECLARED : PREPROCESS_NONE;
	m->def.nulls = strcmp(nulls, "skip") == 0 ? NULLS_SKIP :
		strcmp(nulls, "impute") == 0 ? NULLS_IMPUTE : NULLS_ERROR;
	if (m->def.nulls == NULLS_IMPUTE && !catalog_has_imputation())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("\"nulls\": \"impute\" needs version 0.20.0 of the unlearn catalog"),
				 errhint("Run ALTER EXTENSION unlearn UPDATE.")));
	m->def.deferred = strcmp(removal, "immediate") != 0;
	m->def.async_apply = strcmp(removal, "async") == 0;
	m->def.mechanism = strcmp(mechanism, "noisy_gd") == 0 ? MECHANISM_NOISY_GD :
		strcmp(mechanism, "fisher") == 0 ? MECHANISM_FISHER : MECHANISM_NEWTON;
	if (m->def.mechanism == MECHANISM_NOISY_GD)
		check_noisy_gd_choices(m);
	m->def.noise = strcmp(noise, "laplace") == 0 ? NOISE_LAPLACE : NOISE_GAUSSIAN;
	fisher_choices(fcinfo, m);
	given_noisy_gd_parameters(fcinfo, m);
	/* a catalog before 0.8.0 keeps neither: its models map as 0.7.0 did */
	if (catalog_has_map_grid())
	{
		m->def.intercept_scaling = UNLEARN_INTERCEPT_SCALING;
		m->def.spread_steps = UNLEARN_SPREAD_STEPS;
	}
	else
	{
		m->def.intercept_scaling = 1.0;
		m->def.spread_steps = 1;
	}
	m->def.owner = GetUserId();
	m->def.source = relid;
	m->released.nclasses = 1;
	m->def.dims = -1;
	m->released.status = MODEL_READY;

	resolve_features(m, relid, PG_GETARG_ARRAYTYPE_P(3), m->def.label);
	/* a table partitioned by LIST has its partitions' key as cohorts; '' none */
	if (PG_NARGS() > 25 && !PG_ARGISNULL(25))
	{
		char	   *cohort = text_to_cstring(PG_GETARG_TEXT_PP(25));

		if (cohort[0] != '\0')
		{
			check_cohort_column(m, relid, cohort);
			m->def.cohort = cohort;
		}
	}
	else if (PG_NARGS() > 25)
		m->def.cohort = default_cohort_column(m, relid);
	resolve_filter(m, relid, PG_NARGS() > 28 && !PG_ARGISNULL(28) ?
				   text_to_cstring(PG_GETARG_TEXT_PP(28)) : NULL);
	declare_classes(m, PG_NARGS() > 19 && !PG_ARGISNULL(19) ? PG_GETARG_ARRAYTYPE_P(19) : NULL);
	if (m->def.mechanism == MECHANISM_NOISY_GD &&
		(!m->def.classes_declared || m->released.nlabels != 2))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("mechanism \"noisy_gd\" trains a classifier with two declared classes"),
				 errdetail("Classes taken from the rows would be released without noise."),
				 errhint("Use a boolean label, or declare the two classes with options => '{\"classes\": [...]}'.")));
	if (m->def.preprocess == PREPROCESS_DECLARED)
	{
		m->def.centre = declared_map(m, PG_GETARG_ARRAYTYPE_P(16), "centre", false);
		m->def.spread = declared_map(m, PG_GETARG_ARRAYTYPE_P(17), "spread", true);
	}
	if (distributed)
		check_citus_model(m);
	check_can_train(m, relid, m->def.owner);
	/*
	 * Another role would need TRIGGER on a table the extension's owner owns:
	 * its own triggers there would then run as every role that writes it
	 */
	if (distributed && GetUserId() != table_owner(relid))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("only the owner of distributed table \"%s\" can train a model on it",
						get_rel_name(relid)),
				 errdetail("Training needs the TRIGGER privilege on the table; on a table the extension's owner owns, a role holding it could run its own triggers as every role that writes the table."),
				 errhint("Train as %s.", quote_identifier(GetUserNameFromId(table_owner(relid), false)))));

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	enter_extension_context(&ctx);
	/* tables first, then the model row (see lock_source) */
	old = palloc0(sizeof(UnlearnModel));
	old->def.name = m->def.name;
	if (!catalog_model_identity(m->def.name, false, true, &old->def.owner, &old->def.source))
		old = NULL;
	if (old != NULL && !replace)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("model \"%s\" already exists", m->def.name),
				 errhint("Pass replace => true to train it again, or drop it with unlearn_drop('%s').",
						 m->def.name)));
	if (old != NULL)
		check_model_owner(old, ctx.caller);
	refuse_in_statement(relid, "train a model on");
	if (old != NULL && old->def.source != relid)
		refuse_in_statement(old->def.source, "replace a model of");
	reports = progress_begin("training", m->def.name, m->def.owner, relid);
	progress_phase("waiting for table lock", 0, 1, -1);
	lock_source(relid);
	if (old != NULL && old->def.source != relid)
		lock_source(old->def.source);
	if (old != NULL)
	{
		Oid			owner,
					source;

		if (!catalog_model_identity(m->def.name, true, true, &owner, &source) ||
			source != old->def.source)
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("model \"%s\" changed while it was being replaced", m->def.name),
					 errhint("Retry the transaction.")));
		catalog_delete_model(old->def.name);
		catalog_ledger(old, "replace", 0, 0, 0.0, false);
	}
	/* the shards' writers are held off from here, as the table's are by lock_source */
	if (distributed)
		citus_prepare_model(m);

	if (!retrain_model(m, verbose, true))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("label column \"%s\" has a single class", m->def.label),
				 errhint("A classifier needs at least two distinct labels; use loss => 'squared' for regression.")));
	if (!isfinite(m->def.budget) || !isfinite(m->released.spent))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("sigma and epsilon give model \"%s\" a budget that is not finite", m->def.name),
				 errhint("Choose a smaller sigma or epsilon.")));
	if (training_exceeds_budget(m))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the training residual of model \"%s\" exceeds its removal budget", m->def.name),
				 errdetail("%s", training_residual_detail(m)),
				 errhint("%s", training_residual_hint(m))));
	m->call.retrained_now = true;
	catalog_insert_model(m);
	cohorts_after_change(m, NULL, NULL);
	catalog_attach_triggers(relid);
	if (distributed)
		citus_attach_model(m);
	catalog_set_partitions(relid);
	if (old != NULL && old->def.source != relid)
	{
		catalog_detach_triggers_if_unused(old->def.source);
		citus_detach_model(m->def.name, old->def.source,
						   catalog_models_of_relation(old->def.source) == NIL);
	}
	catalog_ledger(m, "train", 0, m->released.rows, m->released.spent, true);
	summary = training_summary(fcinfo, m, started);
	progress_end(reports);
	leave_extension_context(&ctx);
	SPI_finish();
	PG_RETURN_DATUM(summary);
}

/* x rounded to digits significant digits, for a summary that fits a terminal */
static double
significant(double x, int digits)
{
	double		scale;

	if (x == 0 || !isfinite(x))
		return x;
	scale = pow(10.0, digits - 1 - floor(log10(fabs(x))));
	return isfinite(scale) && isfinite(x * scale) ? round(x * scale) / scale : x;
}

/*
 * The row unlearn_train and unlearn_retrain return (unlearn.summary): the
 * model, its rows and classes, its fit on its rows (accuracy or R^2, one
 * more pass: model_training_fit), budget, spent, state and the seconds
 * since started, rounded to fit a terminal (unlearn.status has the
 * figures in full).
 */
static Datum
training_summary(FunctionCallInfo fcinfo, UnlearnModel *m, TimestampTz started)
{
	TupleDesc	desc;
	Datum		v[9];
	bool		isnull[9] = {false};
	double		fit;

	/* a catalog before 0.20.0 declares the call void */
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		return (Datum) 0;
	progress_phase("measuring fit", 0, 1, -1);
	fit = model_training_fit(m);
	v[0] = CStringGetTextDatum(m->def.name);
	v[1] = Int64GetDatum(m->released.rows);
	v[2] = Int32GetDatum(m->def.loss == LOSS_SQUARED ? 0 : Max(m->released.nlabels, 0));
	isnull[2] = m->def.loss == LOSS_SQUARED;
	v[3] = Float8GetDatum(round(fit * 1e4) / 1e4);
	isnull[3] = m->def.loss == LOSS_SQUARED || isnan(fit);
	v[4] = Float8GetDatum(round(fit * 1e4) / 1e4 + 0.0);	/* -0 is 0 */
	isnull[4] = m->def.loss != LOSS_SQUARED || isnan(fit);
	v[5] = Float8GetDatum(significant(m->def.budget, 4));
	v[6] = Float8GetDatum(significant(m->released.spent, 3));
	v[7] = CStringGetTextDatum(model_status_name(m->released.status));
	v[8] = Float8GetDatum(round((double) (GetCurrentTimestamp() - started) / 1e3) / 1e3);
	/* copied out of SPI's memory, which SPI_finish frees */
	return PointerGetDatum(SPI_returntuple(heap_form_tuple(BlessTupleDesc(desc), v, isnull), desc));
}

Datum
unlearn_retrain(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	bool		verbose = PG_GETARG_BOOL(1);
	UnlearnModel *m;
	int			reports;
	ExtensionContext ctx;
	TimestampTz started = GetCurrentTimestamp();
	Datum		summary;

	state_store_require();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	enter_extension_context(&ctx);
	m = catalog_load_model(name, false, false, false);
	check_model_owner(m, ctx.caller);
	/* the rights that training needs, which may have been revoked since */
	check_can_train(m, m->def.source, ctx.caller);
	refuse_in_statement(m->def.source, "retrain a model of");
	reports = progress_begin("retraining", m->def.name, m->def.owner, m->def.source);
	progress_phase("waiting for table lock", 0, 1, -1);
	lock_source(m->def.source);
	m = catalog_load_model(name, false, true, false);
	retrain_or_rest(m, verbose, NULL);
	m->released.retrains++;
	m->call.retrained_now = true;
	catalog_update_model(m);
	cohorts_after_change(m, NULL, NULL);
	catalog_ledger(m, "retrain", 0, 0, m->released.spent, true);
	summary = training_summary(fcinfo, m, started);
	progress_end(reports);
	leave_extension_context(&ctx);
	SPI_finish();
	PG_RETURN_DATUM(summary);
}

Datum
unlearn_drop(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	UnlearnModel *m;
	ExtensionContext ctx;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	enter_extension_context(&ctx);
	m = lock_source_for_owners(name, ctx.caller,
							   "The owner of a table can drop every model trained on it.");
	catalog_model_identity(name, true, false, &m->def.owner, &m->def.source);
	catalog_delete_model(name);
	catalog_detach_triggers_if_unused(m->def.source);
	citus_detach_model(name, m->def.source, catalog_models_of_relation(m->def.source) == NIL);
	catalog_ledger(m, "drop", 0, 0, 0.0, false);
	leave_extension_context(&ctx);
	SPI_finish();
	PG_RETURN_VOID();
}
