/*-------------------------------------------------------------------------
 *
 * newton.c
 *	  Algorithm 1's minimisation of L_b(w) = sum_i l(w.x_i, y_i) +
 *	  (Lambda/2)||w||^2 + b.w by damped Newton, for every class at once,
 *	  over an oracle that returns each class's data terms (loss, gradient
 *	  and Hessian sums) at a point: one pass over the rows per iteration
 *	  (train_pass.c runs it as an aggregate query).  No SPI, no I/O.
 *
 * Each class starts at w = 0 and iterates
 *
 *	 w <- w - t H^{-1} g(w),   t = 1, 1/2, ... until Armijo holds,
 *
 * evaluating the trial point's loss and gradient in the next pass, so an
 * accepted step costs one pass.  H is H(w) where that pass also took the
 * Hessian (a Newton step), else H(w0) of the anchor w0 (a chord step).
 * The anchor is the last point before w whose Hessian was taken, with
 * that Hessian, as Algorithm 1's solution is one Newton step from where
 * its Hessian was taken: the released w is then never stored as w0, so
 * the removal state holds no released version of the weights (test
 * 004_raw_pages), and the stale-Hessian term of removal's bounds covers w
 * != w0.
 *
 * Which passes take the Hessian.  A pass with the Hessian costs O(n p^2),
 * one with the gradient alone O(n p).  A trial point's pass takes the
 * Hessian unless that point is expected to be the last, or chord steps
 * are converging: after a Newton step, when the residual is at most
 * CHORD_RELATIVE of its norm at w = 0, or when the quadratic model
 * r_next = r (r / r_previous)^2 expects a stop; after a chord step, when
 * it cut the residual by CHORD_CONTRACTION at least.  The squared loss's
 * Hessian does not depend on w: only its first pass takes it, its steps
 * are Newton steps, and the step cap below, which bounds removal's
 * stale-Hessian term of the logistic loss, does not apply to it.  The last
 * point's Hessian is never used (the anchor is a point before it), so a
 * training whose last pass has the gradient alone saves that much.
 *
 * Stopping.  The certificate needs only the training residual u_0 =
 * ||grad L_b(w)|| to fit in the budget eps', and it is spent from the
 * start (paper footnote 1).  A class stops as soon as its certified
 * residual (the gradient norm plus a rounding allowance) is at most
 * NewtonProblem.target, a fraction of eps' (train_pass.c), and at most
 * 1e-4 of its gradient norm at w = 0 (a large sigma's budget would
 * otherwise stop it far from the optimum, where removal steps and their
 * bounds grow), with ||w - w0|| at most 0.1 for the logistic loss (the
 * stale-Hessian term of removal grows as e^||w - w0||), or at most 1e-10
 * of that norm, or when Newton stalls at the rounding floor
 * (below 1e-6 of that norm a full step at least halves the residual,
 * until the rounding of the sums stops it), or once the computed gradient
 * norm is below 1/100 of the rounding allowance, which no further step
 * can lower (on 1M rows at sigma = 0 the allowance is 3e-4 and the norms
 * 468, 0.012, 2e-11: the pass that would only confirm the stall is saved).
 *
 * The rounding allowance of the computed gradient is 2 (n + p) eps M,
 * with M = sum_i |l'_i| + Lambda ||w|| + ||b|| bounded from the pass's
 * loss sum: for the logistic loss |l'(z, y)| = sigma(-yz) <= log(1 +
 * e^{-yz}) = l(z, y), so sum |l'_i| <= sum l_i; for the squared loss
 * sum |2 (z_i - y_i)| <= 2 sqrt(n sum (z_i - y_i)^2).  The weight sum C =
 * sum_i l''(w0.x_i) that removal's bounds use is kept as an upper bound:
 * l'' <= min(1/4, l) for the logistic loss, and exactly 2 n for squared.
 *
 * Cost per iteration: the pass, plus O(p^3 / 3) per class for the factor.
 *
 *-------------------------------------------------------------------------
 */
#include "math/maths.h"

#include <float.h>
#include <math.h>

#include <cblas.h>
#include <lapacke.h>

#include "miscadmin.h"

#define MAX_NEWTON_ITERATIONS 60
#define RELATIVE_TOLERANCE 1e-10
/* the budget's target applies from this relative residual on */
#define TARGET_RELATIVE_CAP 1e-4
/* and once the last step, the distance to the anchor, is this short */
#define TARGET_STEP_CAP 0.1
#define SMALLEST_STEP 1e-10
/* below this relative residual, a step that does not halve it is a stall */
#define STALL_TOLERANCE 1e-6
/*
 * a computed gradient norm below this fraction of the rounding allowance
 * is at the floor: no step can lower the certified residual (norm plus
 * allowance) by more than this fraction
 */
#define ROUNDING_FLOOR_FRACTION 0.01
/* relative slack for sums computed in floating point (loss, l'' bounds) */
#define SUM_SLACK 1e-12
/* below this relative residual, the next points are taken without their Hessian */
#define CHORD_RELATIVE 1e-4
/* chord steps go on while each cuts the residual at least this much */
#define CHORD_CONTRACTION 0.25

typedef struct ClassIterate
{
	double	   *w;				/* the accepted point */
	double	   *g;				/* grad L_b at w */
	double		objective;		/* L_b(w) */
	double		residual;		/* certified ||grad L_b(w)|| */
	double		allowance;		/* its rounding part */
	double		weight_bound;	/* upper bound on sum l''(w.x_i) */
	double		previous;		/* residual one accepted step before */
	double		g0norm;
	bool		fresh;			/* factor is H(w)'s: w's pass took the Hessian */
	bool		chord;			/* w was reached by a chord step */
	double	   *factor;			/* lower Cholesky factor of H(w), full, if fresh */
	bool		has_anchor;
	double	   *anchor;			/* w0, the last point before w with a Hessian */
	double	   *anchor_factor;	/* and its factor */
	double		anchor_weight_bound;
	double		anchor_distance;	/* ||w - w0|| */
	double	   *step;			/* H^{-1} g at w */
	double		t;				/* step length of the pending trial */
	double	   *trial;
	bool		trial_hessian;	/* the trial's pass takes the Hessian */
	bool		done;
	int			iterations;
} ClassIterate;

/* sum_i |l'_i|, bounded from the loss sum (see the header) */
static double
derivative_sum_bound(UnlearnLoss loss, int64 rows, double loss_sum)
{
	if (loss == LOSS_SQUARED)
		return 2.0 * sqrt((double) rows * Max(loss_sum, 0.0)) * (1.0 + SUM_SLACK);
	return Max(loss_sum, 0.0) * (1.0 + SUM_SLACK);
}

/*
 * The rounding allowance of grad L_b(w) computed from a pass's terms:
 * 2 (n + p) eps (sum |l'_i| + Lambda ||w|| + ||b||).
 */
static double
gradient_allowance(UnlearnLoss loss, const PassTerms *terms, double reg,
				   const double *w, const double *b, int p)
{
	double		magnitude = derivative_sum_bound(loss, terms->rows, terms->loss_sum) +
		reg * vec_norm(w, p) + vec_norm(b, p);

	return rounding_allowance(terms->rows, p, magnitude);
}

/* an upper bound on C = sum_i l''(w.x_i) from a pass's terms */
static double
weight_sum_bound(UnlearnLoss loss, const PassTerms *terms)
{
	if (loss == LOSS_SQUARED)
		return 2.0 * terms->rows;
	return Min(0.25 * terms->rows, Max(terms->loss_sum, 0.0)) * (1.0 + SUM_SLACK);
}

/*
 * The regularised terms at w of one class from a pass's data terms, for
 * Newton's iterates and a re-anchoring (train_pass.c): g, holding the
 * data gradient on entry, becomes grad L_b(w) = g + Lambda w + b, with
 * its rounding allowance and the weight-sum bound; given factor (p x p,
 * full), the Cholesky factor of the pass's H + Lambda I.  Returns false if
 * that is not positive definite.
 */
bool
regularised_pass_terms(UnlearnLoss loss, double reg, const double *w, const double *b, int p,
					   const PassTerms *terms, double *g, double *allowance,
					   double *weight_bound, double *factor)
{
	int			j;

	cblas_daxpy(p, reg, w, 1, g, 1);
	cblas_daxpy(p, 1.0, b, 1, g, 1);
	*allowance = gradient_allowance(loss, terms, reg, w, b, p);
	*weight_bound = weight_sum_bound(loss, terms);
	if (factor == NULL)
		return true;
	full_from_packed(terms->hessian, p, factor);
	for (j = 0; j < p; j++)
		factor[(Size) j * p + j] += reg;
	return LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', p, factor, p) == 0;
}

/*
 * Fill a class's objective, gradient and residual at w from the oracle's
 * data terms, and with_hessian the Hessian's factor into it->factor.
 * Returns false if H is not positive definite.
 */
static bool
take_point(const NewtonProblem *np, int k, const double *w, const PassTerms *terms,
		   bool with_hessian, ClassIterate *it)
{
	int			p = np->p;
	const double *b = np->noise + (Size) k * p;
	bool		ok;

	memcpy(it->w, w, sizeof(double) * p);
	memcpy(it->g, terms->gradient, sizeof(double) * p);
	it->objective = terms->loss_sum + 0.5 * np->reg * cblas_ddot(p, w, 1, w, 1) +
		cblas_ddot(p, b, 1, w, 1);
	ok = regularised_pass_terms(np->loss, np->reg, w, b, p, terms, it->g, &it->allowance,
								&it->weight_bound, with_hessian ? it->factor : NULL);
	it->residual = vec_norm(it->g, p) + it->allowance;
	return ok;
}

static void
not_positive_definite(const NewtonProblem *np)
{
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("Hessian of model \"%s\" is not positive definite", np->model),
			 errhint("Increase lambda.")));
}

static void
report_iteration(const NewtonProblem *np, int k, const ClassIterate *it)
{
	if (!np->verbose)
		return;
	ereport(NOTICE,
			(errmsg("%s%s%sNewton iteration %d: loss %.10g, gradient norm %.3e",
					np->nclasses > 1 ? "class " : "",
					np->nclasses > 1 ? np->class_names[k] : "",
					np->nclasses > 1 ? ", " : "", it->iterations, it->objective,
					it->residual - it->allowance)));
}

/*
 * After a pass, for np->report: the largest iteration count, and the
 * largest gradient norm of the classes still iterating (of all once none is)
 */
static void
report_pass(const NewtonProblem *np, const ClassIterate *its)
{
	int			iteration = 0,
				done = 0,
				k;
	double		largest = 0.0,
				largest_iterating = 0.0;

	if (np->report == NULL)
		return;
	for (k = 0; k < np->nclasses; k++)
	{
		double		norm = its[k].residual - its[k].allowance;

		iteration = Max(iteration, its[k].iterations);
		largest = Max(largest, norm);
		if (its[k].done)
			done++;
		else
			largest_iterating = Max(largest_iterating, norm);
	}
	np->report(iteration, np->nclasses, done,
			   done < np->nclasses ? largest_iterating : largest);
}

/* has class k met a stopping rule at its accepted point? */
static bool
converged(const NewtonProblem *np, const ClassIterate *it)
{
	return (it->residual <= np->target && it->residual <= TARGET_RELATIVE_CAP * it->g0norm &&
			(np->loss == LOSS_SQUARED || it->anchor_distance <= TARGET_STEP_CAP)) ||
		it->residual <= RELATIVE_TOLERANCE * it->g0norm ||
		it->iterations >= MAX_NEWTON_ITERATIONS ||
		(it->iterations >= 2 && !it->chord && it->residual > 0.5 * it->previous &&
		 it->residual <= STALL_TOLERANCE * it->g0norm) ||
		(it->iterations >= 1 &&
		 it->residual - it->allowance <= ROUNDING_FLOOR_FRACTION * it->allowance);
}

/*
 * Whether the next trial's pass should take the Hessian (see "Which
 * passes take the Hessian").
 */
static bool
trial_needs_hessian(const NewtonProblem *np, const ClassIterate *it)
{
	double		stop,
				ratio;

	if (np->loss == LOSS_SQUARED)
		return false;
	if (!it->fresh)
		return !(it->residual <= CHORD_CONTRACTION * it->previous);
	if (it->residual <= CHORD_RELATIVE * it->g0norm)
		return false;
	if (it->iterations == 0)
		return true;
	/* the residual a stopping rule accepts, and the model's next one */
	stop = Max(RELATIVE_TOLERANCE * it->g0norm,
			   Min(np->target, TARGET_RELATIVE_CAP * it->g0norm));
	ratio = it->residual / it->previous;
	return !(it->residual * ratio * ratio <= stop);
}

/*
 * The direction H^{-1} g at the accepted point (a Newton step if its
 * Hessian was taken, else a chord step with the anchor's), and a full step
 */
static void
start_step(const NewtonProblem *np, ClassIterate *it)
{
	int			p = np->p;
	lapack_int	info;

	memcpy(it->step, it->g, sizeof(double) * p);
	info = LAPACKE_dpotrs(LAPACK_COL_MAJOR, 'L', p, 1,
						  it->fresh ? it->factor : it->anchor_factor, p, it->step, p);
	if (info != 0)
		elog(ERROR, "LAPACKE_dpotrs failed: %d", (int) info);
	it->t = 1.0;
	it->trial_hessian = trial_needs_hessian(np, it);
	memcpy(it->trial, it->w, sizeof(double) * p);
	cblas_daxpy(p, -1.0, it->step, 1, it->trial, 1);
}

/*
 * Accept the trial point, taken into candidate (its factor in *spare if
 * its pass took the Hessian): the point before becomes the anchor if its
 * Hessian was taken, and the factor buffers trade places.
 */
static void
accept_trial(const NewtonProblem *np, ClassIterate *it, const ClassIterate *candidate,
			 double **spare)
{
	int			p = np->p;
	/* the squared loss's Hessian is the same at every point: no chord */
	bool		chord = !it->fresh && np->loss != LOSS_SQUARED;
	double		distance = 0.0;
	double	   *swap;
	int			j;

	if (it->fresh)
	{
		memcpy(it->anchor, it->w, sizeof(double) * p);
		swap = it->anchor_factor;
		it->anchor_factor = it->factor;
		it->factor = swap;
		it->anchor_weight_bound = it->weight_bound;
		it->has_anchor = true;
	}
	it->previous = it->residual;
	memcpy(it->w, candidate->w, sizeof(double) * p);
	memcpy(it->g, candidate->g, sizeof(double) * p);
	it->objective = candidate->objective;
	it->residual = candidate->residual;
	it->allowance = candidate->allowance;
	it->weight_bound = candidate->weight_bound;
	it->fresh = it->trial_hessian;
	it->chord = chord;
	if (it->fresh)
	{
		swap = it->factor;
		it->factor = *spare;
		*spare = swap;
	}
	for (j = 0; j < p; j++)
	{
		double		d = it->w[j] - it->anchor[j];

		distance += d * d;
	}
	it->anchor_distance = sqrt(distance);
	it->iterations++;
}

/*
 * Minimise every class's L_b from w = 0.  On return coef holds each
 * class's w (K x p), anchor its w0; factor the packed lower Cholesky
 * factor of H(w0) (K x PACKED_SIZE(p)); weight_bound an upper bound on
 * its C at w0; residual its certified training residual ||u_0|| at w.
 */
void
newton_fit(const NewtonProblem *np, double *coef, double *anchor, double *factor,
		   double *weight_bound, double *residual)
{
	int			p = np->p;
	int			K = np->nclasses;
	ClassIterate *its = palloc0(sizeof(ClassIterate) * K);
	int		   *which = palloc(sizeof(int) * K);
	const double **points = palloc(sizeof(double *) * K);
	bool	   *hessian = palloc(sizeof(bool) * K);
	PassTerms  *terms = palloc0(sizeof(PassTerms) * K);
	ClassIterate candidate;
	double	   *spare = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * p * p);
	int			k,
				count;

	memset(&candidate, 0, sizeof(candidate));
	candidate.w = palloc(sizeof(double) * p);
	candidate.g = palloc(sizeof(double) * p);
	for (k = 0; k < K; k++)
	{
		ClassIterate *it = &its[k];

		it->w = palloc0(sizeof(double) * p);
		it->g = palloc(sizeof(double) * p);
		it->step = palloc(sizeof(double) * p);
		it->trial = palloc0(sizeof(double) * p);
		it->anchor = palloc0(sizeof(double) * p);
		it->factor = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * p * p);
		it->anchor_factor = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * p * p);
		which[k] = k;
		points[k] = it->trial;
		hessian[k] = true;
		terms[k].gradient = palloc(sizeof(double) * p);
		terms[k].hessian = MemoryContextAllocHuge(CurrentMemoryContext,
												  sizeof(double) * PACKED_SIZE(p));
	}

	/* the first pass, at w = 0, takes the Hessian */
	np->evaluate(np->arg, K, which, points, hessian, terms);
	for (k = 0; k < K; k++)
	{
		ClassIterate *it = &its[k];

		if (!take_point(np, k, it->trial, &terms[k], true, it))
			not_positive_definite(np);
		it->fresh = true;
		it->g0norm = Max(it->residual - it->allowance, DBL_MIN);
		report_iteration(np, k, it);
		it->done = converged(np, it);
		if (!it->done)
			start_step(np, it);
	}
	report_pass(np, its);

	for (;;)
	{
		count = 0;
		for (k = 0; k < K; k++)
			if (!its[k].done)
			{
				which[count] = k;
				points[count] = its[k].trial;
				hessian[count] = its[k].trial_hessian;
				count++;
			}
		if (count == 0)
			break;
		CHECK_FOR_INTERRUPTS();
		np->evaluate(np->arg, count, which, points, hessian, terms);
		for (count = 0, k = 0; k < K; k++)
		{
			ClassIterate *it = &its[k];
			PassTerms  *tk;
			double		slope;

			if (it->done)
				continue;
			tk = &terms[count++];
			/* the trial point, taken into the candidate */
			candidate.factor = spare;
			if (!take_point(np, k, it->trial, tk, it->trial_hessian, &candidate))
				not_positive_definite(np);
			slope = cblas_ddot(p, it->g, 1, it->step, 1);
			if (candidate.objective <= it->objective - 1e-4 * it->t * slope ||
				(it->t == 1.0 && candidate.objective <= it->objective + 1e-13 * fabs(it->objective)))
			{
				accept_trial(np, it, &candidate, &spare);
				report_iteration(np, k, it);
				it->done = converged(np, it);
				if (!it->done)
					start_step(np, it);
			}
			else
			{
				it->t *= 0.5;
				if (it->t < SMALLEST_STEP)
					it->done = true;	/* at the rounding floor: keep w */
				else
				{
					memcpy(it->trial, it->w, sizeof(double) * p);
					cblas_daxpy(p, -it->t, it->step, 1, it->trial, 1);
				}
			}
		}
		report_pass(np, its);
	}

	for (k = 0; k < K; k++)
	{
		ClassIterate *it = &its[k];

		if (it->residual > STALL_TOLERANCE * it->g0norm && it->residual > np->target)
			ereport(np->warning_level,
					(errmsg("training of model \"%s\" stopped after %d Newton iterations at relative gradient norm %.3e",
							np->model, it->iterations, (it->residual - it->allowance) / it->g0norm),
					 errdetail("The residual is measured and counted in the spent budget.")));
		memcpy(coef + (Size) k * p, it->w, sizeof(double) * p);
		if (!it->has_anchor)
		{
			/* converged where it started, w = 0 with its Hessian: its own anchor */
			memcpy(anchor + (Size) k * p, it->w, sizeof(double) * p);
			packed_from_full(it->factor, p, factor + PACKED_SIZE(p) * k);
			weight_bound[k] = it->weight_bound;
		}
		else
		{
			memcpy(anchor + (Size) k * p, it->anchor, sizeof(double) * p);
			packed_from_full(it->anchor_factor, p, factor + PACKED_SIZE(p) * k);
			weight_bound[k] = it->anchor_weight_bound;
		}
		residual[k] = it->residual;
	}
}
