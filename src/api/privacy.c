/*-------------------------------------------------------------------------
 *
 * privacy.c
 *	  unlearn_privacy: a model's guarantees as (epsilon, delta).  For a
 *	  Noisy-GD model they come from its Renyi accountant (math/renyi.c)
 *	  over the public figures it keeps: the DP of one row present, over
 *	  the fewest rows since training, and the data-deletion epsilon the
 *	  model's changes reached (spent: the largest over its changes, each
 *	  holding over every later release).  For a Newton model, the
 *	  certified removal of one release at (epsilon, delta), or at
 *	  (epsilon, 0) with noise 'laplace'.  A fisher model's guarantee is in
 *	  nats (unlearn.status), not (epsilon, delta).
 *
 *	  The accountant's internal SQL functions (_renyi_*) are here too,
 *	  for test/python/check_renyi.py, and _laplace_norms for
 *	  test/python/check_laplace.py.
 *
 *-------------------------------------------------------------------------
 */
#include "api/api.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(unlearn_privacy);
PG_FUNCTION_INFO_V1(unlearn_renyi_epsilon);
PG_FUNCTION_INFO_V1(unlearn_renyi_steps);
PG_FUNCTION_INFO_V1(unlearn_renyi_noise);
PG_FUNCTION_INFO_V1(unlearn_laplace_norms);

#define PRIVACY_COLUMNS 12

Datum
unlearn_privacy(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	TupleDesc	desc;
	Datum		values[PRIVACY_COLUMNS];
	bool		nulls[PRIVACY_COLUMNS];
	UnlearnModel *m;
	ExtensionContext ctx;
	bool		noisy;
	int			i;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "unlearn_privacy must return a composite type");
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	enter_extension_context(&ctx);
	m = catalog_load_model(name, false, false, false);
	check_model_read(m->def.name, m->def.owner, ctx.caller, false);
	leave_extension_context(&ctx);

	noisy = m->def.mechanism == MECHANISM_NOISY_GD;
	for (i = 0; i < PRIVACY_COLUMNS; i++)
		nulls[i] = false;
	values[0] = CStringGetTextDatum(m->def.name);
	values[1] = CStringGetTextDatum(mechanism_for(m)->name);
	if (noisy && m->released.status == MODEL_READY)
	{
		values[2] = Float8GetDatum(noisy_gd_dp_epsilon(m));
		values[4] = Float8GetDatum(m->released.spent);
	}
	else
	{
		nulls[2] = true;
		/* a Newton model certifies one release while spent <= eps' */
		values[4] = Float8GetDatum(m->def.epsilon);
		nulls[4] = noisy || m->def.sigma <= 0.0 || m->released.status != MODEL_READY ||
			m->def.mechanism == MECHANISM_FISHER;
	}
	values[3] = Float8GetDatum(m->def.delta);
	nulls[3] = nulls[2];
	values[5] = Float8GetDatum(m->def.noise == NOISE_LAPLACE ? 0.0 : m->def.delta);
	nulls[5] = nulls[4];
	values[6] = Float8GetDatum(noisy ? m->def.budget : m->def.epsilon);
	nulls[6] = m->def.mechanism == MECHANISM_FISHER;
	values[7] = Float8GetDatum(m->def.sigma);
	values[8] = Float8GetDatum(m->def.step_size);
	values[9] = Int64GetDatum(m->def.training_steps);
	values[10] = Int64GetDatum(m->released.gd_steps);
	values[11] = Int64GetDatum(m->released.fewest_rows);
	for (i = 8; i < PRIVACY_COLUMNS; i++)
		nulls[i] = !noisy;
	SPI_finish();
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}

/* the accountant's arguments, checked */
static void
renyi_arguments(FunctionCallInfo fcinfo, NoisyGdParameters *gd, double *n, double *rows,
				double *delta, int delta_arg)
{
	int			i;

	for (i = 0; i < 5; i++)
		if (!(isfinite(PG_GETARG_FLOAT8(i)) && PG_GETARG_FLOAT8(i) > 0))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("lambda, step_size, noise, n and rows_changed must be positive and finite")));
	gd->lambda = PG_GETARG_FLOAT8(0);
	gd->step_size = PG_GETARG_FLOAT8(1);
	gd->noise = PG_GETARG_FLOAT8(2);
	*n = PG_GETARG_FLOAT8(3);
	*rows = PG_GETARG_FLOAT8(4);
	*delta = PG_GETARG_FLOAT8(delta_arg);
	if (!(*delta > 0 && *delta < 1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("delta must be between 0 and 1, exclusive")));
}

Datum
unlearn_renyi_epsilon(PG_FUNCTION_ARGS)
{
	NoisyGdParameters gd;
	double		n,
				rows,
				delta,
				alpha = 0.0;
	double		steps = PG_GETARG_FLOAT8(5);
	TupleDesc	desc;
	Datum		values[2];
	bool		nulls[2] = {false, false};

	renyi_arguments(fcinfo, &gd, &n, &rows, &delta, 6);
	if (!(isfinite(steps) && steps >= 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("steps must be finite and not negative")));
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "_renyi_epsilon must return a composite type");
	values[0] = Float8GetDatum(renyi_epsilon(&gd, n, rows, steps, delta, &alpha));
	values[1] = Float8GetDatum(alpha);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}

Datum
unlearn_renyi_steps(PG_FUNCTION_ARGS)
{
	NoisyGdParameters gd;
	double		n,
				rows,
				delta;
	double		epsilon = PG_GETARG_FLOAT8(5);
	int64		steps;

	renyi_arguments(fcinfo, &gd, &n, &rows, &delta, 6);
	if (!(isfinite(epsilon) && epsilon > 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("epsilon must be positive and finite")));
	steps = renyi_steps_needed(&gd, n, rows, epsilon, delta);
	if (steps < 0)
		PG_RETURN_NULL();
	PG_RETURN_INT64(steps);
}

Datum
unlearn_renyi_noise(PG_FUNCTION_ARGS)
{
	double		lambda = PG_GETARG_FLOAT8(0);
	double		n = PG_GETARG_FLOAT8(1);
	double		epsilon = PG_GETARG_FLOAT8(2);
	double		delta = PG_GETARG_FLOAT8(3);
	double		noise;

	if (!(isfinite(lambda) && lambda > 0 && isfinite(n) && n > 0 && isfinite(epsilon) &&
		  epsilon > 0 && delta > 0 && delta < 1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lambda, n and epsilon must be positive and finite, and delta between 0 and 1")));
	noise = renyi_noise_for(lambda, n, epsilon, delta);
	if (isnan(noise))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(noise);
}

/*
 * unlearn._laplace_norms(dims, scale, draws): ||b|| of draws vectors from
 * the sampler of noise 'laplace' (math/laplace_noise.c), measured after
 * the draw, for the test of its distribution: Gamma(dims, scale).
 */
Datum
unlearn_laplace_norms(PG_FUNCTION_ARGS)
{
	int32		dims = PG_GETARG_INT32(0);
	double		scale = PG_GETARG_FLOAT8(1);
	int32		draws = PG_GETARG_INT32(2);
	double	   *b;
	Datum	   *norms;
	int			i;

	if (dims < 1 || dims > UNLEARN_MAX_DIMS || draws < 1 || draws > 1000000 ||
		!(isfinite(scale) && scale > 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("dims must be between 1 and 100000, draws between 1 and 1000000, and scale positive")));
	b = palloc(sizeof(double) * dims);
	norms = palloc(sizeof(Datum) * draws);
	for (i = 0; i < draws; i++)
	{
		CHECK_FOR_INTERRUPTS();
		draw_laplace_noise(b, dims, scale);
		norms[i] = Float8GetDatum(vec_norm(b, dims));
	}
	PG_RETURN_ARRAYTYPE_P(construct_array(norms, draws, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL,
										  TYPALIGN_DOUBLE));
}
