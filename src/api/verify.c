/*-------------------------------------------------------------------------
 *
 * verify.c
 *	  Audit of a released model against its table: the exact gradient
 *	  residual u = grad L_b(w; D) (which every certificate bounds by beta),
 *	  and a fresh retrain with the same noise b and the same Lambda.
 *
 * Both need b, so only the model's owner can run them.  Cost: one pass
 * over the table for the residual, a full training for the retrain.
 *
 *-------------------------------------------------------------------------
 */
#include "api/api.h"

#include <math.h>

#include <cblas.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(unlearn_verify);
PG_FUNCTION_INFO_V1(unlearn_residual);

static void
load_current_rows(UnlearnModel *m, DesignMatrix *dm)
{
	load_design(m, relation_qualified_name(m->def.source), dm);
	map_design(m, dm, false);
}

/* ||u|| over all classes; u_out (K * p) may be NULL */
double
exact_residual(UnlearnModel *m, const DesignMatrix *dm, double *u_out)
{
	double	   *g = palloc(sizeof(double) * m->def.p);
	double		total = 0.0;
	int			k;

	for (k = 0; k < m->released.nclasses; k++)
	{
		double		norm;

		design_gradient(m, dm, k, m->released.coef + (Size) k * m->def.p,
						m->state.noise + (Size) k * m->def.p, g, NULL);
		norm = vec_norm(g, m->def.p);
		total += norm * norm;
		if (u_out)
			memcpy(u_out + (Size) k * m->def.p, g, sizeof(double) * m->def.p);
	}
	pfree(g);
	return sqrt(total);
}

/* accuracy (classifiers) or R^2 (squared loss) of weights w on the rows */
double
model_accuracy(UnlearnModel *m, const DesignMatrix *dm, const double *w)
{
	int64		i;
	int64		correct = 0;
	double		sse = 0.0,
				mean = 0.0,
				sst = 0.0;

	if (dm->n == 0)
		return NAN;
	for (i = 0; i < dm->n; i++)
	{
		const double *x = dm->x + i * m->def.p;

		if (m->def.loss == LOSS_SQUARED)
		{
			double		r = cblas_ddot(m->def.p, w, 1, x, 1) - dm->y[i];

			sse += r * r;
			mean += dm->y[i];
		}
		else if (m->released.nclasses == 1)
		{
			double		z = cblas_ddot(m->def.p, w, 1, x, 1);

			correct += ((z >= 0) == (dm->y[i] > 0));
		}
		else
		{
			int			k,
						best = 0;
			double		top = -INFINITY;

			for (k = 0; k < m->released.nclasses; k++)
			{
				double		z = cblas_ddot(m->def.p, w + (Size) k * m->def.p, 1, x, 1);

				if (z > top)
				{
					top = z;
					best = k;
				}
			}
			correct += (best == dm->cls[i]);
		}
	}
	if (m->def.loss != LOSS_SQUARED)
		return (double) correct / dm->n;
	mean /= dm->n;
	for (i = 0; i < dm->n; i++)
		sst += (dm->y[i] - mean) * (dm->y[i] - mean);
	return sst > 0 ? 1.0 - sse / sst : NAN;
}

/* the model, checked to be the caller's and to release weights */
UnlearnModel *
load_owned_model(text *name, Oid caller)
{
	UnlearnModel *m = catalog_load_model(text_to_cstring(name), false, false, false);

	check_model_owner(m, caller);
	if (m->released.status != MODEL_READY)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("model \"%s\" releases no weights: its state is \"%s\"",
						m->def.name, model_status_name(m->released.status)),
				 m->released.status == MODEL_SUSPENDED ?
				 errhint("unlearn_retrain('%s') brings it back, once what suspended it (see the ledger and the last WARNING) is mended.", m->def.name) :
				 errhint("unlearn_retrain('%s') brings it back once its table has enough rows.", m->def.name)));
	load_release_state(m);
	return m;
}

/*
 * The removal state of a ready model, for a function of this layer: coef
 * stays what the model publishes, and a fisher model's secret w stays in
 * the state (catalog_load_state puts it in coef, for the mechanisms).
 */
void
load_release_state(UnlearnModel *m)
{
	if (!MODEL_KEEPS_STATE(m))
		return;
	catalog_load_state(m, false);
	if (m->state.weights != NULL)
		m->released.coef = m->released.published;
}

Datum
unlearn_verify(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	UnlearnModel *m;
	DesignMatrix dm;
	double	   *retrained;
	double	   *factor;
	double	   *anchor;
	double		residual,
				limit,
				distance = 0.0;
	bool		noisy;
	Datum		values[7];
	bool		nulls[7] = {false, false, false, false, false, false, false};
	int			k;
	ExtensionContext ctx;

	InitMaterializedSRF(fcinfo, 0);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	enter_extension_context(&ctx);
	m = load_owned_model(PG_GETARG_TEXT_PP(0), ctx.caller);
	load_current_rows(m, &dm);
	noisy = m->def.mechanism == MECHANISM_NOISY_GD;
	/*
	 * Noisy-GD releases a sample: its guarantee is its accountant's.  A
	 * fisher model's bound is on its secret w, whose residual norm is
	 * measured there; the rest compares what it publishes.
	 */
	if (m->state.weights != NULL)
	{
		m->released.coef = m->state.weights;
		residual = exact_residual(m, &dm, NULL);
		limit = budget_limit(m);
		m->released.coef = m->released.published;
	}
	else
	{
		residual = noisy ? 0.0 : exact_residual(m, &dm, NULL);
		limit = budget_limit(m);
	}

	/* a fresh fit from w = 0, same b (Noisy-GD: none), same Lambda, same row map */
	retrained = palloc0(sizeof(double) * m->released.nclasses * m->def.p);
	factor = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * PACKED_SIZE(m->def.p));
	anchor = palloc(sizeof(double) * m->def.p);
	for (k = 0; k < m->released.nclasses; k++)
	{
		double		weight_sum;

		fit_class(m, &dm, k, m->state.noise + (Size) k * m->def.p, retrained + (Size) k * m->def.p,
				  anchor, factor, &weight_sum, false);
	}
	for (k = 0; k < m->released.nclasses * m->def.p; k++)
		distance += (retrained[k] - m->released.coef[k]) * (retrained[k] - m->released.coef[k]);

	values[0] = Float8GetDatum(residual);
	nulls[0] = noisy;
	values[1] = Float8GetDatum(m->released.spent);
	values[2] = Float8GetDatum(limit);
	values[3] = BoolGetDatum(residual <= m->released.spent && m->released.spent <= limit);
	values[4] = Float8GetDatum(sqrt(distance));
	values[5] = Float8GetDatum(model_accuracy(m, &dm, m->released.coef));
	values[6] = Float8GetDatum(model_accuracy(m, &dm, retrained));
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	free_design(&dm);
	leave_extension_context(&ctx);
	SPI_finish();
	return (Datum) 0;
}

Datum
unlearn_residual(PG_FUNCTION_ARGS)
{
	UnlearnModel *m;
	DesignMatrix dm;
	double	   *u;
	Datum	   *d;
	int			i,
				n;
	ArrayType  *result;
	MemoryContext caller = CurrentMemoryContext;
	ExtensionContext ctx;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	enter_extension_context(&ctx);
	m = load_owned_model(PG_GETARG_TEXT_PP(0), ctx.caller);
	load_current_rows(m, &dm);
	n = m->released.nclasses * m->def.p;
	u = palloc(sizeof(double) * n);
	exact_residual(m, &dm, u);
	free_design(&dm);

	{
		MemoryContext spi = MemoryContextSwitchTo(caller);

		d = palloc(sizeof(Datum) * n);
		for (i = 0; i < n; i++)
			d[i] = Float8GetDatum(u[i]);
		result = construct_array(d, n, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
		MemoryContextSwitchTo(spi);
	}
	leave_extension_context(&ctx);
	SPI_finish();
	PG_RETURN_ARRAYTYPE_P(result);
}
