/*-------------------------------------------------------------------------
 *
 * maintain.c
 *	  One statement's change of one model, end to end: what the Newton
 *	  mechanism (mechanism/newton.c) is asked to do with the rows, and what
 *	  happens when it cannot: re-anchoring by a pass over the table, the
 *	  budget rule of Algorithm 2 (retrain or suspend), putting a model with
 *	  too few rows to rest, and rebuilding matrices that are not resident.
 *
 * A DELETE's rows come from the statement trigger (trigger.c) as raw
 * batches; maintain_model maps them, asks the mechanism for the step and
 * its bound, and writes the model and its ledger entry (store/catalog.c).
 * A Noisy-GD model goes through the same states (too few rows, a
 * retraining) and then runs its noisy steps on the rows after the change
 * (noisy_gd_run.c) instead of a Newton step on the statement's rows.
 *
 * Cost: the mechanism's O(k p^2) per statement of k rows, plus one O(n
 * p^2) pass for a re-anchoring (once per exhausted budget), a rebuild
 * (once per start-up) or a retrain, and one O(n p) pass per statement for
 * the exact bound.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include <float.h>
#include <math.h>

#include <cblas.h>

#include "access/xact.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

bool		unlearn_reanchor = true;

void
removal_init(void)
{
	DefineCustomBoolVariable("unlearn.reanchor",
							 "Re-anchor a model before its removal budget would run out.",
							 "Rebuilds the Hessian at the current weights and replaces the spent budget "
							 "by the measured gradient residual; off follows Algorithm 2 strictly and "
							 "retrains instead.",
							 &unlearn_reanchor, true, PGC_USERSET, 0, NULL, NULL, NULL);
}

/*
 * Take one statement's rows into a classifier's rows per class, and say
 * whether its classes still hold: false if a class loses its last row or
 * a row brings a label that is no class of the model.  The model is then
 * retrained and takes its classes from the rows left (retrain_or_rest),
 * so its public class list never names a label of deleted rows only.
 * Declared classes always hold: a class may have no row, and a row with
 * another label never reaches the model (model_takes_label).  O(rows * K).
 */
bool
class_rows_update(UnlearnModel *m, const RowBatch *removed, const RowBatch *added)
{
	bool		holds = true;
	int			i,
				k;

	if (m->def.loss == LOSS_SQUARED || m->released.status != MODEL_READY)
		return true;
	if (m->state.class_rows == NULL)
	{
		/* trained before 0.4.0: a retrain takes the classes from the rows */
		return !catalog_tracks_classes();
	}
	for (i = 0; removed != NULL && i < removed->count; i++)
	{
		k = class_position(m->released.classes, m->released.nlabels, removed->labels[i]);
		if (k < 0)
			holds = false;
		else
			m->state.class_rows[k]--;
	}
	for (i = 0; added != NULL && i < added->count; i++)
	{
		k = class_position(m->released.classes, m->released.nlabels, added->labels[i]);
		if (k < 0)
			holds = false;
		else
			m->state.class_rows[k]++;
	}
	for (k = 0; k < m->released.nlabels && !m->def.classes_declared; k++)
		if (m->state.class_rows[k] <= 0)
			holds = false;
	return holds;
}

/*
 * The exact bound of a whole statement: one pass over the rows the model
 * reflects now.
 */
static void
exact_statement_bound(UnlearnModel *m, const double *w_start, const StepRows *rems,
					  const StepRows *adds, double *bound)
{
	DesignMatrix dm;
	int			p = m->def.p;
	double	   *g_end = palloc(sizeof(double) * p);
	double	   *g_start = palloc(sizeof(double) * p);
	int			k;

	load_design(m, relation_qualified_name(m->def.source), &dm);
	map_design(m, &dm, false);
	for (k = 0; k < m->released.nclasses; k++)
	{
		double		mag_end,
					mag_start;

		design_gradient(m, &dm, k, m->released.coef + (Size) k * p, NULL, g_end, &mag_end);
		design_gradient(m, &dm, k, w_start + (Size) k * p, NULL, g_start, &mag_start);
		cblas_daxpy(p, -1.0, g_start, 1, g_end, 1);
		/* R = g_end - g_start - Delta(w_start) */
		newton_exact_remainder(m, rems, adds, k, w_start + (Size) k * p, g_end);
		bound[k] = vec_norm(g_end, p)
			+ 2.0 * (dm.n + p + rems->count + adds->count) * DBL_EPSILON
			* (mag_end + mag_start + rems->count + adds->count);
	}
	free_design(&dm);
}

static void
map_batch(UnlearnModel *m, RowBatch *batch)
{
	RowMap		map;
	int			i;

	if (batch == NULL)
		return;
	model_row_map(m, &map);
	for (i = 0; i < batch->count; i++)
		map_row(&map, batch->x + (Size) i * m->def.p);
}

/* re-raise a lock's serialization failure with the model's name and a hint */
void
rethrow_lock_failure(const char *name, MemoryContext cxt)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	if (edata->sqlerrcode == ERRCODE_T_R_SERIALIZATION_FAILURE)
	{
		FlushErrorState();
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access to model \"%s\" due to a concurrent change", name),
				 errdetail("Another transaction changed the model since this transaction's snapshot."),
				 errhint("Retry the transaction.")));
	}
	PG_RE_THROW();
}

static UnlearnModel *
lock_model(const char *name, bool with_state)
{
	MemoryContext cxt = CurrentMemoryContext;
	UnlearnModel *volatile m = NULL;

	PG_TRY();
	{
		m = catalog_load_model(name, with_state, true, true);
	}
	PG_CATCH();
	{
		rethrow_lock_failure(name, cxt);
	}
	PG_END_TRY();
	return m;
}

static double
elapsed_ms(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return INSTR_TIME_GET_MILLISEC(now);
}

typedef struct ModelLoad
{
	const char *name;
	bool		with_state;
	bool		for_update;
	MemoryContext row_cxt;		/* non-NULL: keep a copy of the catalog row
								 * there (catalog_load_model_keeping_row) */
	HeapTuple	row;
	TupleDesc	desc;
	UnlearnModel *m;			/* given with its row locked: load its state */
} ModelLoad;

static void
load_model_work(void *arg)
{
	ModelLoad  *load = (ModelLoad *) arg;

	if (load->m != NULL)
		catalog_load_model_state(load->m, true);
	else if (load->row_cxt != NULL)
		load->m = catalog_load_model_keeping_row(load->name, load->row_cxt, &load->row, &load->desc);
	else
		load->m = load->for_update ? lock_model(load->name, load->with_state) :
			catalog_load_model(load->name, load->with_state, false, true);
}

static bool
is_corruption(const ErrorData *edata, void *arg)
{
	return edata->sqlerrcode == ERRCODE_DATA_CORRUPTED;
}

/*
 * catalog_load_model (with its state and locked, if for_update) in a
 * subtransaction, so that a stored definition that fails its checks
 * (XX001) is cleaned up as PL/pgSQL's exception blocks do: then NULL, and
 * the error, whose message names the model and the check, in *corruption.
 * NULL without it: the model does not exist.
 */
UnlearnModel *
load_model_checked(const char *name, bool with_state, bool for_update, ErrorData **corruption)
{
	ModelLoad	load = {name, with_state || for_update, for_update, NULL, NULL, NULL, NULL};

	*corruption = run_in_subtransaction(load_model_work, &load, is_corruption);
	return load.m;
}

/*
 * load_model_checked for a change of the table: a definition that fails
 * its checks (XX001) must not stop the change, so the model is quarantined
 * (it withholds its weights, catalog_quarantine_model) with a WARNING, and
 * NULL returned.
 */
static UnlearnModel *
load_for_change(ModelLoad *load)
{
	ErrorData  *corruption = run_in_subtransaction(load_model_work, load, is_corruption);

	if (corruption == NULL)
		return load->m;
	ereport(WARNING,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("%s", corruption->message),
			 errdetail("The change goes on; the model withholds its weights until it is dropped or replaced.")));
	catalog_quarantine_model(load->name);
	return NULL;
}

/* Load a model's definition for a change of its table (load_for_change). */
UnlearnModel *
load_model_for_change(const char *name, bool with_state)
{
	ModelLoad	load = {name, with_state, with_state, NULL, NULL, NULL, NULL};

	return load_for_change(&load);
}

/*
 * load_model_for_change(name, false) with the model's row locked as
 * maintain_model locks it: a definition that the query which applies the
 * change decodes its rows with, and gives to maintain_model
 * (ModelRows.loaded), which then reads only its state.
 */
UnlearnModel *
lock_model_for_change(const char *name)
{
	ModelLoad	load = {name, false, true, NULL, NULL, NULL, NULL};

	return load_for_change(&load);
}

/*
 * load_model_for_change(name, false), keeping a copy of the model's
 * catalog row and its descriptor in cxt when the definition passed its
 * checks (*row NULL otherwise): the row catalog_model_from_row decodes
 * again without a query.
 */
UnlearnModel *
load_model_keeping_row(const char *name, MemoryContext cxt, HeapTuple *row, TupleDesc *desc)
{
	ModelLoad	load = {name, false, false, cxt, NULL, NULL, NULL};
	UnlearnModel *m = load_for_change(&load);

	*row = m != NULL ? load.row : NULL;
	*desc = load.desc;
	return m;
}

static const char *const map_moved =
"The centre or spread of a column of the remaining rows moved to another grid step.";

/*
 * Apply one query's rows to one model: lock, load, step, write, ledger.
 * Rows left out for a null ("nulls": "skip") only change its count.
 */
void
maintain_model(ModelRows *rows, const char *operation, Oid caller)
{
	UnlearnModel *m;
	double		bound;
	const char *retrain_reason = rows->retrain_reason;
	double		spent_before;
	instr_time	start;
	double		t_load,
				t_apply;
	int64		nrem = rows->removed ? rows->removed->count : 0;
	int			nadd = rows->added ? rows->added->count : 0;
	bool		changed;
	ListCell   *lc;

	if (nrem + nadd + list_length(rows->whole) == 0 && rows->retrain_reason == NULL &&
		!rows->other_entered && rows->p >= 0)
	{
		if (rows->skipped_delta != 0 && load_model_for_change(rows->name, false) != NULL)
			catalog_count_skipped(rows->name, rows->skipped_delta);
		return;
	}
	INSTR_TIME_SET_CURRENT(start);
	if (rows->loaded != NULL)
	{
		ModelLoad	load = {rows->name, true, true, NULL, NULL, NULL, rows->loaded};

		m = load_for_change(&load);
	}
	else
		m = load_model_for_change(rows->name, true);
	t_load = elapsed_ms(start);
	if (m == NULL)
		return;					/* dropped meanwhile, or quarantined */
	changed = rows->p != m->def.p;
	if (changed)
	{
		/*
		 * rows decoded with another definition (the model changed during
		 * the statement, apply_change): none is applied, the model is
		 * trained again on the table as it is
		 */
		rows->removed = rows->added = NULL;
		nrem = nadd = 0;
		retrain_reason = "The model changed during the statement.";
		/* a model that releases nothing only counts its rows: count them */
		if (m->released.status != MODEL_READY)
		{
			int64		skipped;

			m->released.rows = model_row_count(m, &skipped);
			rows->skipped_delta = skipped - m->released.skipped;
		}
	}
	/* rows whose features stayed as they were, one perhaps with a new category */
	if (nrem + nadd + list_length(rows->whole) == 0 && rows->retrain_reason == NULL && !changed &&
		(m->released.status != MODEL_READY || !MODEL_KEEPS_STATE(m) ||
		 (retrain_reason = taken_categories_retrain_reason(m, m->released.rows, NULL, true)) == NULL))
	{
		if (rows->skipped_delta != 0)
			catalog_count_skipped(rows->name, rows->skipped_delta);
		return;
	}
	m->call.changed_by = caller;
	foreach(lc, rows->whole)
		m->call.whole_rows += ((WholeCohort *) lfirst(lc))->rows;
	nrem += m->call.whole_rows;
	spent_before = m->released.spent;
	m->released.skipped += rows->skipped_delta;
	/*
	 * Noisy-GD reads the rows after the change, not the statement's, and
	 * keeps no matrices, rows per class (its classes are declared) or
	 * column sums (its map is not fitted to the rows)
	 */
	if (MODEL_KEEPS_STATE(m))
	{
		if (m->released.status == MODEL_READY)
			catalog_checkout_matrices(m);
		if (!class_rows_update(m, rows->removed, rows->added))
			retrain_reason = m->state.class_rows == NULL ?
				"The model was trained before its catalog kept its rows per class." :
				"A class of the model lost its last row, or a row brings a new class.";
		/* the sums go forward in any case: a retrain replaces them */
		if (m->released.status == MODEL_READY && !column_map_update(m, rows->removed, rows->added) &&
			retrain_reason == NULL)
			retrain_reason = map_moved;
		/*
		 * Whole cohorts counted from their keys are exactly their model rows
		 * only in a change that deletes and nothing else (a row inserted in
		 * the same change, in the model or not, could be among them)
		 */
		if (rows->whole != NIL && m->released.status == MODEL_READY && strcmp(operation, "delete") != 0)
			retrain_reason = "A statement that removed whole cohorts also inserted or updated rows.";
		else if (rows->whole != NIL && m->released.status == MODEL_READY)
		{
			int64		rest = (rows->removed ? rows->removed->count : 0) -
				(rows->added ? rows->added->count : 0);

			switch (cohorts_take_whole(m, rows->whole, &m->call.whole_cohorts))
			{
				case COHORTS_CHANGED:
					retrain_reason = "The statistics of a cohort it removed whole no longer match its rows.";
					break;
				case COHORTS_MOVED:
					if (retrain_reason == NULL)
						retrain_reason = "A class of the model lost its last row.";
					break;
			}
			/* the map over all the rows left, the whole cohorts' included */
			if (retrain_reason == NULL &&
				!column_map_still_holds(m, m->released.rows - rest - m->call.whole_rows,
										Abs(rest) + m->call.whole_rows))
				retrain_reason = map_moved;
		}
		/* a taken category's own reason rather than the map's it moves */
		if ((retrain_reason == NULL || retrain_reason == map_moved) &&
			m->released.status == MODEL_READY)
		{
			const char *taken = taken_categories_retrain_reason(m, m->released.rows - nrem + nadd,
																rows->added, rows->other_entered);

			if (taken != NULL)
				retrain_reason = taken;
		}
		if (retrain_reason == NULL)
			m->call.cohorts = cohort_change_begin(m, rows->removed, rows->added);
		map_batch(m, rows->removed);
		map_batch(m, rows->added);
	}
	bound = apply_row_changes(m, rows->removed, rows->added, retrain_reason);
	t_apply = elapsed_ms(start);
	catalog_update_model(m);
	cohorts_after_change(m, rows->removed, rows->added);
	if (m->call.rebuilt_now)
		catalog_ledger(m, "rebuild", 0, 0, 0.0, false);
	nrem -= cohorts_write_ledger(m);
	if (nrem + nadd > 0 || m->call.erased_cohorts == NIL || m->call.retrained_now)
		catalog_ledger(m, operation, nrem, nadd, bound, m->call.retrained_now);
	if (MODEL_KEEPS_STATE(m))
		worker_note_change(m, spent_before);
	if (message_level_is_interesting(DEBUG1) && caller_reads_figures(m))
		elog(DEBUG1, "unlearn: model \"%s\": lock and load %.2f ms, update %.2f ms, write %.2f ms",
			 m->def.name, t_load, t_apply - t_load, elapsed_ms(start) - t_apply);
}

/*
 * m releases nothing from now on (status too few rows or suspended): its
 * weights are zeros, and it keeps no taken category (taken_categories_forget).
 */
static void
withhold_weights(UnlearnModel *m, ModelStatus status)
{
	m->released.status = status;
	taken_categories_forget(m);
	memset(m->released.coef, 0, sizeof(double) * m->released.nclasses * m->def.p);
}

/*
 * Release nothing and keep nothing: too few rows to fit p weights, or
 * (one_class) the rows of a classifier have a single label left.
 */
static void
rest_model(UnlearnModel *m, int64 rows, bool one_class)
{
	withhold_weights(m, MODEL_TOO_FEW_ROWS);
	m->released.rows = rows;
	m->state.class_rows = NULL;
	if (!one_class && m->def.loss == LOSS_LOGISTIC && !m->def.classes_declared &&
		catalog_tracks_classes())
		classes_from_rows(m);
	if (one_class)
		ereport(MODEL_NOTICE(m),
				(errmsg("model \"%s\" withholds its weights: the rows of its table have a single label",
						m->def.name),
				 errhint("Inserting rows of another label, or unlearn_retrain('%s') once there are some, brings it back.",
						 m->def.name)));
	else
		ereport(MODEL_NOTICE(m),
				(errmsg("model \"%s\" withholds its weights: its table has %lld rows, fewer than its %d weights",
						m->def.name, (long long) rows, m->def.p),
				 errhint("Inserting rows, or unlearn_retrain('%s') once there are enough, brings it back.",
						 m->def.name)));
}

/*
 * Retrain m on its table's rows with fresh noise, or, if the table holds
 * fewer rows than weights (or a classifier's rows a single label), put it
 * to rest (MODEL_TOO_FEW_ROWS): erasure never fails for want of rows.  A
 * classifier whose catalog keeps its rows per class and whose classes are
 * not declared takes its classes afresh from the rows, so that its class
 * list never names a label that only deleted rows had; declared classes
 * stay, and rows of other labels stay outside (model_takes_label).
 */
void
retrain_or_rest(UnlearnModel *m, bool verbose, const char *why)
{
	int64		skipped;
	int64		rows = model_row_count(m, &skipped);

	if (rows < m->def.p)
	{
		m->released.skipped = skipped;
		rest_model(m, rows, false);
		return;
	}
	if (m->def.ntaken > 0 && !take_categories(m))
	{
		ereport(MODEL_WARNING(m),
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("model \"%s\" withholds its weights: a column whose categories it takes from its rows has too many values, or too long a one",
						m->def.name),
				 errdetail("A taken column may have at most 1000 values of at most 200 bytes each, and a model at most %d features.",
						   UNLEARN_MAX_DIMS),
				 errhint("Train it again with the categories declared: category(column, '{a,b,...}').")));
		withhold_weights(m, MODEL_SUSPENDED);
		m->state.class_rows = NULL;
		return;
	}
	/* the categories taken afresh may make more weights than rows */
	if (rows < m->def.p)
	{
		m->released.skipped = skipped;
		rest_model(m, rows, false);
		return;
	}
	if (why != NULL)
		ereport(MODEL_NOTICE(m),
				(errmsg("retraining model \"%s\" on the remaining rows with fresh noise", m->def.name),
				 errdetail("%s", why)));
	if (m->def.loss == LOSS_LOGISTIC && !m->def.classes_declared && catalog_tracks_classes())
		m->released.classes = NULL;
	if (!retrain_model(m, verbose, true))
	{
		/* classes holds the one label left; nothing is released */
		m->released.nclasses = 1;
		rest_model(m, rows, true);
		return;
	}
	m->released.status = MODEL_READY;
	if (training_exceeds_budget(m))
	{
		/* the training residual alone passes the limit: nothing certified to release */
		ereport(MODEL_WARNING(m),
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model \"%s\" withholds its weights: its training residual exceeds its removal budget",
						m->def.name),
				 errdetail("%s", training_residual_detail(m)),
				 errhint("%s", training_residual_hint(m))));
		withhold_weights(m, MODEL_SUSPENDED);
	}
}

/*
 * What a training whose residual passes the budget limit says: the two
 * figures, and the step that brings the model back.
 */
char *
training_residual_detail(UnlearnModel *m)
{
	return psprintf("The certified training residual is %.6g; the limit is %.6g.",
					m->released.spent, budget_limit(m));
}

char *
training_residual_hint(UnlearnModel *m)
{
	double		sigma = m->def.sigma * 4.0 * m->released.spent / m->def.budget;

	if (m->def.loss == LOSS_SQUARED)
		return psprintf("sigma is too small for the magnitude of this table's labels: train again with "
						"sigma => %.3g or more, or rescale the label, or delete or correct its outlying rows "
						"and run unlearn_retrain('%s').", sigma, m->def.name);
	return psprintf("sigma is too small for this table: train again with sigma => %.3g or more.",
					sigma);
}

/* Algorithm 2's way out: retrain on the remaining rows with a fresh b */
static void
retrain_now(UnlearnModel *m, const char *why)
{
	retrain_or_rest(m, false, why);
	m->released.retrains++;
	m->call.retrained_now = true;
}

/*
 * Re-anchoring (certified-removal.md §5): rebuild every class's H (and C)
 * at its current w on the rows the model reflects now (w0 := w), rebuild
 * K' = X'X for guo, and measure the residual u_k = grad L_b(w_k; D) itself.
 * beta_k then becomes ||u_k|| plus the rounding allowance of that sum,
 * 2 (n + p) eps (sum |l'| + Lambda ||w|| + ||b||), as after training.
 *
 * This is sound because the certificate (Theorem 1) needs only ||u|| <=
 * eps' for the released w; beta is an upper bound on ||u||, and the sum of
 * per-step bounds of Algorithm 2 is just one such bound, by the triangle
 * inequality.  Neither w nor b changes: this is not a retrain.  It costs
 * one O(n p^2) pass, about one Newton iteration of training, and resets
 * the stale-Hessian term of later steps to zero.
 *
 * Returns false, having changed nothing, if some H is not positive
 * definite.
 */
static bool
reanchor_model(UnlearnModel *m, double *u_out, double *allowance_out)
{
	int			p = m->def.p;
	int			K = m->released.nclasses;
	Size		packed = PACKED_SIZE(p);
	double	   *factor = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * packed * K);
	double	   *measured = palloc(sizeof(double) * K);
	double	   *weights = palloc(sizeof(double) * K);
	double	   *g = palloc(sizeof(double) * K * p);
	double	   *allowance = palloc(sizeof(double) * K);
	int64		rows;
	bool		ok;
	int			k;

	linalg_parallel(true);
	ok = reanchor_passes(m, factor, weights, g, allowance, &rows);
	for (k = 0; k < K && ok; k++)
	{
		measured[k] = vec_norm(g + (Size) k * p, p) + allowance[k];
		if (u_out != NULL)
		{
			memcpy(u_out + (Size) k * p, g + (Size) k * p, sizeof(double) * p);
			allowance_out[k] = allowance[k];
		}
	}
	if (ok)
	{
		memcpy(m->state.factor, factor, sizeof(double) * packed * K);
		memcpy(m->state.weight_sum, weights, sizeof(double) * K);
		memcpy(m->state.anchor, m->released.coef, sizeof(double) * K * p);
		memcpy(m->state.class_spent, measured, sizeof(double) * K);
		m->released.spent = combine_class_spent(m->state.class_spent, K);
		m->call.anchor_changed = m->call.gram_changed = true;
		m->call.reanchors_now = 1;
		if (message_level_is_interesting(DEBUG1) && caller_reads_figures(m))
			elog(DEBUG1, "unlearn: re-anchored model \"%s\" on %lld rows: measured residual %.6g of budget %.6g",
				 m->def.name, (long long) rows, m->released.spent, m->def.budget);
	}
	linalg_parallel(false);
	pfree(factor);
	pfree(measured);
	pfree(weights);
	pfree(g);
	pfree(allowance);
	return ok;
}

/*
 * Re-anchor m now, between statements (the maintenance worker, worker.c),
 * building its matrices afresh in matrices (a buffer of this backend,
 * model_matrix_doubles(m) long): no row changes, so no step follows.
 * Returns false if some H is not positive definite.
 */
bool
reanchor_into(UnlearnModel *m, double *matrices)
{
	model_point_matrices(m, matrices);
	return reanchor_model(m, NULL, NULL);
}

/*
 * The matrices of the version this statement starts from are not resident
 * (first change after a start-up, a crash, a failover, a restore or an
 * eviction; state_store.c): rebuild them by re-anchoring at the current w.
 * w, b and beta's inputs are in logged tables, so this never needs fresh
 * noise.
 *
 * The trigger runs after the statement, so the table holds D' = D - R + A,
 * while w reflects D, the rows before the statement (R removed, A added):
 * the statement's step must start from D's state.  So H, C and K' are
 * built over D' at w and then brought back to D by a rank-one update per
 * removed row and a down-date by the added rows, and the residual is
 * measured over D' and moved back the same way:
 *
 *	 u(w; D) = u(w; D') + sum_R l'(w.x) x - sum_A l'(w.x) x,
 *
 * and beta_k = ||u_k(w; D)|| plus the measured sum's rounding allowance
 * and that of the added terms, 2 (|R| + |A| + p) eps sum |l'|.  Returns false if some H is not
 * positive definite.
 */
static bool
rebuild_matrices(UnlearnModel *m, const StepRows *rems, const StepRows *adds)
{
	double	   *u = palloc(sizeof(double) * m->released.nclasses * m->def.p);
	double	   *allowance = palloc(sizeof(double) * m->released.nclasses);
	bool		ok;

	model_point_matrices(m, state_store_buffer(m->def.name, model_matrix_doubles(m)));
	ok = reanchor_model(m, u, allowance) && newton_move_back(m, rems, adds, u, allowance);
	if (ok)
		m->call.rebuilt_now = true;
	pfree(u);
	pfree(allowance);
	return ok;
}

static void exhausted(UnlearnModel *m, double spent_before, bool measured);

/*
 * Bring m to its table as it is now, when a statement's removed rows were
 * not all read (cohorts removed whole, whose statistics could not erase
 * them): re-anchor at the current w over the rows (H, C and the measured
 * residual of the table as it is), then certify by measuring with Newton
 * steps from that exact Hessian, or else retrain.  O(n p^2) + O(n p) a
 * step.
 */
static void
settle_on_table(UnlearnModel *m)
{
	double	   *measured = palloc(sizeof(double) * m->released.nclasses);
	double		spent_before = m->released.spent;

	if (m->state.factor == NULL)
		model_point_matrices(m, state_store_buffer(m->def.name, model_matrix_doubles(m)));
	if (!reanchor_model(m, NULL, NULL))
	{
		retrain_now(m, "Its Hessian is not positive definite at the current weights.");
		return;
	}
	if (!budget_exceeded(m, m->state.class_spent))
		return;
	if (certify_by_measuring(m, measured))
	{
		memcpy(m->state.class_spent, measured, sizeof(double) * m->released.nclasses);
		m->released.spent = combine_class_spent(m->state.class_spent, m->released.nclasses);
		return;
	}
	exhausted(m, spent_before, true);
}

/*
 * The statement would take beta past eps'.  First re-anchor, which
 * replaces beta by the measured residual (an async model's apply first
 * measures the residual without re-anchoring: certify_by_measuring); if
 * that still does not fit, or cannot be done, the model is exhausted:
 * retrain (Algorithm 2) or fail, per on_exhausted.  Returns whether the
 * model was retrained.
 */
static bool
handle_exhausted(UnlearnModel *m)
{
	double		spent_before = m->released.spent;
	bool		measured;

	/*
	 * An apply of an async model's queue is one step of many rows, whose
	 * bound grows with their square: measuring the residual it left, by
	 * gradient passes (O(n p) each), certifies it at a fraction of a
	 * re-anchoring's O(n p^2), as often as the queue fills
	 */
	if (m->def.async_apply && m->def.mechanism == MECHANISM_NEWTON && unlearn_reanchor &&
		catalog_has_training_passes())
	{
		double	   *residual = palloc(sizeof(double) * m->released.nclasses);

		if (certify_by_measuring(m, residual))
		{
			memcpy(m->state.class_spent, residual, sizeof(double) * m->released.nclasses);
			m->released.spent = combine_class_spent(m->state.class_spent, m->released.nclasses);
			return false;
		}
	}
	measured = unlearn_reanchor && reanchor_model(m, NULL, NULL);

	if (measured && !budget_exceeded(m, m->state.class_spent))
		return false;
	exhausted(m, spent_before, measured);
	return true;
}

/*
 * The budget is exhausted (spent_before was spent before the change; the
 * residual was measured, or not): the model retrains (Algorithm 2) or,
 * under on_exhausted 'suspend', withholds its weights while the statement
 * goes on.
 */
static void
exhausted(UnlearnModel *m, double spent_before, bool measured)
{
	if (!m->def.retrain_on_exhausted)
	{
		/* the statement goes on; the model withholds its weights */
		ereport(MODEL_NOTICE(m),
				(errmsg("removal budget of model \"%s\" is exhausted: it withholds its weights", m->def.name),
				 measured ?
				 errdetail("Spent %.6g of %.6g; this change would exceed it, and so does the measured residual %.6g.",
						   spent_before, budget_limit(m), m->released.spent) :
				 errdetail("Spent %.6g of %.6g; this change would exceed it.",
						   spent_before, budget_limit(m)),
				 errhint("Retrain the model with unlearn_retrain('%s'), or train it with options => '{\"on_exhausted\": \"retrain\"}'.",
						 m->def.name)));
		withhold_weights(m, MODEL_SUSPENDED);
		return;
	}
	retrain_now(m, "The removal budget would be exceeded.");
}

/*
 * Apply one statement's row changes to m (which must be loaded with its
 * state and locked).  A retrain_reason retrains m instead (its column map
 * or its classes would differ on the rows left: column_map_update,
 * class_rows_update).  Returns the l2 (over classes) bound of the statement's change; m is left ready for
 * catalog_update_model.
 */
double
apply_row_changes(UnlearnModel *m, RowBatch *removed, RowBatch *added, const char *retrain_reason)
{
	StepRows	rems,
				adds;
	int			K = m->released.nclasses;
	int			p = m->def.p;
	double	   *statement_bound = palloc0(sizeof(double) * K);
	double	   *spent_after = palloc(sizeof(double) * K);
	double	   *w_start = NULL;
	double		spent_before = m->released.spent;
	double		total_bound;
	int			k;
	bool		retrained = false;
	int64		nrem = (removed ? removed->count : 0) + m->call.whole_rows;
	int			nadd = added ? added->count : 0;

	m->released.removed += nrem;
	m->released.inserted += nadd;

	if (m->released.status != MODEL_READY)
	{
		/*
		 * Nothing released: count rows, and come back when added rows bring
		 * enough of them, or a second label to a classifier that had one.
		 */
		m->released.rows += nadd - nrem;
		if (m->released.status == MODEL_TOO_FEW_ROWS && m->released.rows >= m->def.p && nadd > 0)
			retrain_now(m, m->released.rows - nadd + nrem >= m->def.p ?
						"Rows were added to a classifier whose rows had fewer than two labels." :
						"Its table has enough rows again.");
		/*
		 * its public class list follows the rows here too; a suspended
		 * model's lists none, without reading a table whose rows may be what
		 * suspended it
		 */
		if (m->released.status != MODEL_READY && !m->call.retrained_now && nrem > 0 &&
			m->def.loss == LOSS_LOGISTIC && !m->def.classes_declared && catalog_tracks_classes())
		{
			if (m->released.status == MODEL_SUSPENDED)
				no_classes(m);
			else
				classes_from_rows(m);
		}
		/* and it keeps no taken category */
		if (m->released.status != MODEL_READY && !m->call.retrained_now && nrem > 0)
			taken_categories_forget(m);
		return 0.0;
	}
	if (m->released.rows + nadd - nrem < m->def.p)
	{
		rest_model(m, m->released.rows + nadd - nrem, false);
		return 0.0;
	}
	if (retrain_reason != NULL)
	{
		retrain_now(m, retrain_reason);
		return 0.0;
	}
	if (m->def.mechanism == MECHANISM_NOISY_GD)
	{
		double		eps;

		/* K(S) noisy steps on the rows after the change, S rows replaced */
		m->released.rows += nadd - nrem;
		eps = noisy_gd_apply_change(m, Max(nrem, nadd));
		if (eps >= 0.0)
			return eps;
		/* a training releases nothing of the rows that left */
		retrain_now(m, "Forgetting these rows by noisy steps would take as long as a training.");
		return 0.0;
	}
	/*
	 * cohorts removed whole, their rows not read, leave from their
	 * statistics, or the model settles on the table as it is now
	 */
	if (m->call.whole_cohorts != NIL &&
		(m->state.factor == NULL || nadd > 0 ||
		 !cohorts_erase_listed(m, m->call.whole_cohorts, removed == NULL || removed->count == 0)))
	{
		m->released.rows += nadd - nrem;
		settle_on_table(m);
		return 0.0;
	}
	/* whole cohorts among the rows read leave from their statistics (cohorts.c) */
	if (m->call.cohorts != NULL && m->state.factor != NULL)
		removed = cohorts_erase_whole(m, removed, added);
	step_rows_prepare(m, removed, &rems);
	step_rows_prepare(m, added, &adds);

	if (m->state.factor == NULL && !rebuild_matrices(m, &rems, &adds))
	{
		retrain_now(m, "Its Hessian is not positive definite at the current weights.");
		return 0.0;
	}
	if (m->def.bound == BOUND_EXACT)
	{
		w_start = palloc(sizeof(double) * K * p);
		memcpy(w_start, m->released.coef, sizeof(double) * K * p);
	}
	if (rems.count + adds.count > 0 && !mechanism_for(m)->apply(m, &rems, &adds, statement_bound))
	{
		retrain_now(m, "The Hessian factor lost positive definiteness.");
		retrained = true;
	}
	if (retrained)
		return 0.0;

	m->released.rows += adds.count - rems.count;
	if (m->def.bound == BOUND_EXACT && m->def.loss != LOSS_SQUARED)
		exact_statement_bound(m, w_start, &rems, &adds, statement_bound);
	total_bound = combine_class_spent(statement_bound, K);

	for (k = 0; k < K; k++)
		spent_after[k] = m->state.class_spent[k] + statement_bound[k];
	if (budget_exceeded(m, spent_after))
	{
		if (handle_exhausted(m))
			return m->released.status == MODEL_READY ? total_bound : 0.0;
	}
	else
	{
		memcpy(m->state.class_spent, spent_after, sizeof(double) * K);
		m->released.spent = combine_class_spent(m->state.class_spent, K);
	}
	if (m->def.budget > 0 && m->def.loss != LOSS_SQUARED &&
		spent_before < 0.9 * m->def.budget && m->released.spent >= 0.9 * m->def.budget)
		ereport(MODEL_NOTICE(m),
				(errmsg("less than 10%% of the removal budget of model \"%s\" is left", m->def.name),
				 errdetail("Spent %.4g of %.4g.", m->released.spent, m->def.budget),
				 unlearn_reanchor ?
				 errhint("A removal that would exceed the budget first re-anchors the model, measuring its residual; if that does not fit either, it %s.",
						 m->def.retrain_on_exhausted ? "retrains the model" : "suspends the model") :
				 errhint(m->def.retrain_on_exhausted ?
						 "The next removals that would exceed the budget retrain the model." :
						 "A removal that would exceed the budget suspends the model until unlearn_retrain().")));
	return total_bound;
}

/*
 * A model whose owner may no longer read its columns reads the factor
 * that the rows would move: it keeps no state from then on and only
 * counts rows.
 */
void
suspend_if_owner_may_not_read(UnlearnModel *m, Oid caller)
{
	if (m->released.status == MODEL_SUSPENDED || model_owner_may_read(m))
		return;
	m->call.changed_by = caller;
	ereport(MODEL_WARNING(m),
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("model \"%s\" is suspended: its owner may no longer read its columns of table \"%s\"",
					m->def.name, get_rel_name(m->def.source)),
			 errhint("The table's owner can drop it with unlearn_drop('%s').", m->def.name)));
	catalog_quarantine_model(m->def.name);
	m->released.status = MODEL_SUSPENDED;
}

/*
 * A model whose feature expression raised an error for a row of a change
 * (ln of 0, a division by zero): the statement goes on with the row
 * outside the model, counted, and the model, whose training and
 * re-anchoring would fail on the same row, keeps no state and withholds
 * its weights until it is trained again.  The message names the model
 * and the table, never the row or the error's text, which may quote a
 * value.
 */
void
suspend_for_failed_expression(UnlearnModel *m, Oid caller)
{
	if (m->released.status == MODEL_SUSPENDED)
		return;
	m->call.changed_by = caller;
	ereport(MODEL_WARNING(m),
			(errcode(ERRCODE_DATA_EXCEPTION),
			 errmsg("model \"%s\" is suspended: a feature expression or the filter failed for a row of table \"%s\"",
					m->def.name, get_rel_name(m->def.source)),
			 errdetail("The statement goes on; the row is outside the model."),
			 errhint("Make the expression null where it fails, as in ln(NULLIF(income, 0)), then train the model again with unlearn_train(..., replace => true).")));
	catalog_quarantine_model(m->def.name);
	m->released.status = MODEL_SUSPENDED;
}

typedef struct RetrainWork
{
	UnlearnModel *m;
	const char *why;
} RetrainWork;

static void
retrain_work(void *arg)
{
	RetrainWork *w = (RetrainWork *) arg;

	retrain_or_rest(w->m, false, w->why);
}

/* an error of the rows' values: a feature expression or filter failed */
static bool
data_failure(const ErrorData *edata, void *arg)
{
	return expression_error_of_row(edata);
}

/*
 * Bring m to its table after rows entered or left it without a statement:
 * retrain it (or put it to rest), or, if its owner may no longer read the
 * table, suspend it and count the rows; ledger operation `operation`.
 * Rows that came without a statement (an attached partition) were never
 * read by the triggers: when a feature expression or the filter fails for
 * one, the retrain is rolled back and the model suspended, so the command
 * goes on.
 */
void
retrain_after_rows_left(UnlearnModel *m, Oid caller, const char *operation, const char *why)
{
	RetrainWork work = {m, why};
	ErrorData  *failure;

	if (!model_owner_may_read(m))
	{
		/* no weights from rows its owner may not read: counts only */
		int64		skipped;

		suspend_if_owner_may_not_read(m, caller);
		taken_categories_forget(m);
		m->released.rows = model_row_count(m, &skipped);
		m->released.skipped = skipped;
		catalog_update_model(m);
		catalog_ledger(m, operation, 0, 0, m->released.spent, false);
		return;
	}
	failure = run_in_subtransaction(retrain_work, &work, data_failure);
	if (failure != NULL)
	{
		FreeErrorData(failure);
		suspend_for_failed_expression(m, caller);
		/* rows left: the categories they may have had go too */
		taken_categories_forget(m);
		if (m->call.features_retaken)
			catalog_write_features(m);
		return;
	}
	m->released.retrains++;
	m->call.retrained_now = true;
	catalog_update_model(m);
	cohorts_after_change(m, NULL, NULL);
	catalog_ledger(m, operation, 0, 0, m->released.spent, true);
}
