/*-------------------------------------------------------------------------
 *
 * plan.c
 *	  unlearn_plan: the noise sigma that lets a model absorb a target number
 *	  of single-row removals between re-anchorings (or retrains), and what
 *	  that noise costs in accuracy.
 *
 * The budget is linear in sigma: eps'(sigma) = sigma eps'(1) for fixed
 * (epsilon, delta) (budget.c).  T removals of bound r each need
 * eps' >= sqrt(K) T r for a one-vs-rest model of K classes (each class
 * spends T r; the budget applies to the l2 norm over classes), so
 *
 *	 sigma = sqrt(K) T r / eps'(1).
 *
 * Two values of r:
 *	- worst case, from the table size alone: with ||x|| <= 1, |l'| <= 1
 *	  and H >= Lambda I, one removal moves w by ||v|| <= 1 / Lambda, and
 *	  Guo et al. (2020), Theorem 1, bound its residual by
 *	  gamma (n - 1) ||v||^2 <= gamma (n - 1) / Lambda^2;
 *	  This counts one removal from the optimum; the model's own per-step
 *	  bounds (removal.c) also pay for the stale Hessian as removals add up,
 *	  so a model at this sigma may still re-anchor before T removals;
 *	- measured, for an existing model: the mean bound per changed row of
 *	  its ledger, which is what the model's own data and bound spend.
 * The bounds hardly depend on sigma (only through w), so the measured r of
 * a model trained at one sigma plans another.
 *
 * For an existing model the accuracy cost is measured, not guessed: the
 * model's current rows are fitted once with b = 0 and once per planned
 * sigma with a fresh draw b ~ N(0, sigma^2 I), at the same Lambda and row
 * map, and the training-set accuracy (R^2 for squared loss) is compared.
 * That is one training per row of the result: O(n p^2) per Newton
 * iteration and class.  Without a model only the guess sigma sqrt(pK) /
 * Lambda, an upper bound on the expected shift E ||H^-1 b|| of the
 * weights, is given.
 *
 *-------------------------------------------------------------------------
 */
#include "api/api.h"

#include <math.h>

#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(unlearn_plan);

#define PLAN_COLUMNS 9

typedef struct PlanInput
{
	int64		removals;
	int64		rows;
	int			p;				/* weights per class */
	int			classes;		/* K: weight vectors */
	double		epsilon;
	double		delta;
	double		lambda;
	UnlearnLoss loss;
} PlanInput;

/* Guo et al., Theorem 1: the residual of one removal from n rows */
static double
worst_case_removal_bound(UnlearnLoss loss, int64 rows, double reg)
{
	return loss_gamma(loss) * (double) Max(rows - 1, 0) / (reg * reg);
}

/* accuracy of the model's rows fitted with noise of deviation sigma */
static double
fitted_accuracy(UnlearnModel *m, const DesignMatrix *dm, double sigma)
{
	double	   *w = palloc0(sizeof(double) * m->released.nclasses * m->def.p);
	double	   *b = palloc(sizeof(double) * m->released.nclasses * m->def.p);
	double	   *factor = MemoryContextAllocHuge(CurrentMemoryContext,
												sizeof(double) * PACKED_SIZE(m->def.p));
	double	   *anchor = palloc(sizeof(double) * m->def.p);
	double		accuracy;
	int			k;

	draw_gaussian_noise(b, m->released.nclasses * m->def.p, sigma);
	for (k = 0; k < m->released.nclasses; k++)
	{
		double		weight_sum;

		CHECK_FOR_INTERRUPTS();
		fit_class(m, dm, k, b + (Size) k * m->def.p, w + (Size) k * m->def.p, anchor, factor,
				  &weight_sum, false);
	}
	accuracy = model_accuracy(m, dm, w);
	pfree(w);
	pfree(b);
	pfree(factor);
	pfree(anchor);
	return accuracy;
}

/*
 * The most rows one statement may remove within the budget that covers
 * in->removals single-row removals.  A statement is one Newton step, whose
 * Delta is the sum of its rows' gradients: the step, and the bound with
 * its square, grow up to k^2 times a row's (Guo et al., Theorem 4).  The
 * worst case bound of k rows is gamma (n - k) k^2 / Lambda^2 against
 * gamma (n - 1) / Lambda^2 for one; the measured one k^2 times the mean
 * bound per row.
 */
static int64
statement_rows(const PlanInput *in, bool worst)
{
	double		n = (double) in->rows;
	double		allowed = (double) in->removals * (worst ? n - 1.0 : 1.0);
	/* k^2 (n - k) grows up to k = 2n/3: search there, where it is monotone */
	int64		top = worst ? Max((int64) (2.0 * n / 3.0), 1) : in->rows;
	int64		lo = 1,
				hi = top;

	/* the largest k with k^2 (n - k) <= allowed (worst) or k^2 <= allowed */
	while (lo < hi)
	{
		int64		mid = lo + (hi - lo + 1) / 2;
		double		k = (double) mid;

		if (k * k * (worst ? n - k : 1.0) <= allowed)
			lo = mid;
		else
			hi = mid - 1;
	}
	/* past the peak every size fits */
	return worst && lo == top ? in->rows : lo;
}

static void
emit(ReturnSetInfo *rsinfo, const char *basis, const PlanInput *in, double bound,
	 UnlearnModel *m, const DesignMatrix *dm, double accuracy_at_zero)
{
	Datum		values[PLAN_COLUMNS];
	bool		nulls[PLAN_COLUMNS] = {false, false, false, false, false, false, false, false, false};
	double		reg = in->lambda * (double) in->rows;
	double		sigma = sqrt((double) in->classes) * (double) in->removals * bound /
		gaussian_budget(1.0, in->epsilon, in->delta);

	values[0] = CStringGetTextDatum(basis);
	values[1] = Float8GetDatum(sigma);
	values[2] = Float8GetDatum(gaussian_budget(sigma, in->epsilon, in->delta));
	values[3] = Float8GetDatum(bound);
	values[4] = Float8GetDatum(sigma * sqrt((double) in->p * in->classes) / reg);
	if (m != NULL)
	{
		double		accuracy = fitted_accuracy(m, dm, sigma);

		values[5] = Float8GetDatum(accuracy_at_zero);
		values[6] = Float8GetDatum(accuracy);
		values[7] = Float8GetDatum(accuracy_at_zero - accuracy);
	}
	else
		nulls[5] = nulls[6] = nulls[7] = true;
	values[8] = Int64GetDatum(statement_rows(in, strcmp(basis, "worst case") == 0));
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

static void
check_plan_input(const PlanInput *in)
{
	if (in->removals < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("removals must be at least 1")));
	if (in->rows < 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("rows must be at least 2"),
				 errhint("Give the table's row count, or a model trained on it.")));
	if (in->p < 1 || in->p > UNLEARN_MAX_DIMS + 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("dims must be between 1 and %d", UNLEARN_MAX_DIMS)));
	if (in->classes < 2 || in->classes > UNLEARN_MAX_CLASSES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("classes must be between 2 and %d", UNLEARN_MAX_CLASSES)));
	if (!(in->epsilon > 0) || isinf(in->epsilon))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("epsilon must be a finite number > 0")));
	if (!(in->delta > 0 && in->delta < 1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("delta must be between 0 and 1, exclusive")));
	if (!(in->lambda > 0) || isinf(in->lambda))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lambda must be a finite number > 0")));
}

/*
 * unlearn_plan(removals, model, rows, dims, classes, epsilon, delta,
 * lambda, loss, intercept): one row for the worst case and, for a model
 * with changes in its ledger, one measured row.
 */
Datum
unlearn_plan(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PlanInput	in;
	UnlearnModel *m = NULL;
	DesignMatrix dm;
	double		measured = NAN;
	double		accuracy_at_zero = NAN;
	char	   *loss;
	ExtensionContext ctx;

	memset(&dm, 0, sizeof(dm));
	if (PG_ARGISNULL(0) || PG_ARGISNULL(5) || PG_ARGISNULL(6) || PG_ARGISNULL(8) ||
		PG_ARGISNULL(9))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("removals, epsilon, delta, loss and intercept must not be null"),
				 errhint("Leave out an argument to take its default.")));
	InitMaterializedSRF(fcinfo, 0);
	in.removals = PG_GETARG_INT64(0);
	in.rows = PG_ARGISNULL(2) ? 0 : PG_GETARG_INT64(2);
	in.p = PG_ARGISNULL(3) ? 0 : PG_GETARG_INT32(3) + (PG_GETARG_BOOL(9) ? 1 : 0);
	in.classes = PG_ARGISNULL(4) ? 2 : PG_GETARG_INT32(4);
	in.epsilon = PG_GETARG_FLOAT8(5);
	in.delta = PG_GETARG_FLOAT8(6);
	in.lambda = PG_ARGISNULL(7) ? 1e-3 : PG_GETARG_FLOAT8(7);
	loss = text_to_cstring(PG_GETARG_TEXT_PP(8));
	in.loss = strcmp(loss, "squared") == 0 ? LOSS_SQUARED : LOSS_LOGISTIC;
	if (in.loss != LOSS_SQUARED && strcmp(loss, "logistic") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("loss must be 'logistic' or 'squared'")));

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	enter_extension_context(&ctx);
	if (!PG_ARGISNULL(1))
	{
		/* what the model is: its rows, weights, classes and loss */
		m = load_owned_model(PG_GETARG_TEXT_PP(1), ctx.caller);
		if (m->def.mechanism != MECHANISM_NEWTON || m->def.noise != NOISE_GAUSSIAN)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("unlearn_plan plans the Gaussian noise of Newton models, and model \"%s\" is %s",
							m->def.name, m->def.mechanism == MECHANISM_FISHER ? "a fisher model" :
							m->def.mechanism == MECHANISM_NOISY_GD ? "a noisy_gd model" :
							"a model with noise \"laplace\""),
					 errhint("%s", m->def.mechanism == MECHANISM_FISHER ?
							 "A fisher model chooses its noise at each release from nats." :
							 m->def.mechanism == MECHANISM_NOISY_GD ?
							 "Noisy-GD chooses its noise and steps from epsilon and delta." :
							 "Its budget is epsilon sigma: sigma = budget / epsilon.")));
		load_design(m, relation_qualified_name(m->def.source), &dm);
		map_design(m, &dm, false);
		in.rows = dm.n;
		in.p = m->def.p;
		in.classes = Max(m->released.nlabels, 2);
		in.loss = m->def.loss;
		if (PG_ARGISNULL(7))
			in.lambda = m->def.reg / (double) m->released.trained_rows;
		m->def.reg = in.lambda * (double) dm.n;
		measured = catalog_mean_bound_per_row(m->def.name, m->def.owner);
	}
	check_plan_input(&in);
	/* one-vs-rest spends per class; a binary model has one weight vector */
	if (in.classes == 2)
		in.classes = 1;
	if (m != NULL)
		accuracy_at_zero = fitted_accuracy(m, &dm, 0.0);

	emit(rsinfo, "worst case", &in,
		 worst_case_removal_bound(in.loss, in.rows, in.lambda * (double) in.rows),
		 m, &dm, accuracy_at_zero);
	if (m != NULL && !isnan(measured))
		emit(rsinfo, "measured", &in, measured, m, &dm, accuracy_at_zero);
	if (m != NULL)
		free_design(&dm);
	leave_extension_context(&ctx);
	SPI_finish();
	return (Datum) 0;
}
