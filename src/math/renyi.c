/*-------------------------------------------------------------------------
 *
 * renyi.c
 *	  The Renyi accountant of Noisy-GD (seed 002; mechanisms.md 1), and
 *	  Noisy-GD's steps themselves.
 *
 * Symbols, in the average form f(theta) = (1/n) sum_i l_i(theta) +
 * (lambda/2) ||theta||^2 with each l_i 1-Lipschitz (rows of norm <= 1,
 * |l'| <= 1; each row's gradient is clipped to norm 1 all the same):
 *
 *	eta		the step size, at most 1 / (1/4 + lambda) (f is that smooth)
 *	sigma	the noise: each step adds N(0, 2 eta sigma^2 I)
 *	alpha	a Renyi order, from the grid renyi_orders
 *	eps0(alpha) = 4 alpha / (lambda sigma^2 n^2)
 *			the Renyi DP of Noisy-GD from the stationary start
 *			theta_0 ~ N(0, sigma^2 / lambda I), for one row and any
 *			number of steps
 *	S		the rows a change replaces (a deletion or an insertion counts
 *			as one replacement): S rows cost S^2 eps0
 *	K		the steps run on the rows after a change
 *	eps_dd(alpha) = exp(-lambda eta K / alpha) S^2 eps0(alpha)
 *			the Renyi divergence, for the rows a change removed, between
 *			the model after its K steps and Noisy-GD run on the rows that
 *			remain all along (seed 002, Thm 5.1 and G.15): the changed
 *			rows' influence contracts with every later step, so each
 *			change's guarantee holds over every later release too
 *
 * An RDP level r at order alpha gives (eps, delta)-DP with (Balle et al.
 * 2020, Thm 21)
 *
 *	eps = r + ln((alpha - 1) / alpha) - (ln delta + ln alpha) / (alpha - 1)
 *
 * and the accountant reports the least eps over the grid.
 *
 *-------------------------------------------------------------------------
 */
#include "math/maths.h"

#include <float.h>
#include <math.h>

#include <cblas.h>

/* the most the formula's K(S) may be off by its rounding, either way */
#define RENYI_ROUNDING_STEPS 64

/*
 * The orders: 1.25 to 10 by 0.25, 11 to 64 by 1, 72 to 256 by 8.  Fills
 * orders (at least RENYI_ORDERS long) and returns how many.
 */
int
renyi_orders(double *orders)
{
	int			n = 0;
	int			i;

	for (i = 5; i <= 40; i++)
		orders[n++] = 0.25 * i;
	for (i = 11; i <= 64; i++)
		orders[n++] = i;
	for (i = 72; i <= 256; i += 8)
		orders[n++] = i;
	Assert(n == RENYI_ORDERS);
	return n;
}

/* eps0(alpha): one row's Renyi DP of Noisy-GD over n rows */
double
renyi_row_divergence(double alpha, double lambda, double sigma, double n)
{
	return 4.0 * alpha / (lambda * sigma * sigma * n * n);
}

/* the (eps, delta) of an RDP level r at order alpha (Balle et al.) */
double
renyi_to_epsilon(double r, double alpha, double delta)
{
	return r + log((alpha - 1.0) / alpha) - (log(delta) + log(alpha)) / (alpha - 1.0);
}

/*
 * The least eps over the orders of the divergence
 * exp(-lambda eta K / alpha) S^2 eps0(alpha): with K = 0 the DP of S rows,
 * with K > 0 the deletion guarantee of S rows changed K steps ago.  *order
 * receives the order that gives it (NULL: not wanted).
 */
double
renyi_epsilon(const NoisyGdParameters *gd, double n, double rows_changed, double steps,
			  double delta, double *order)
{
	double		orders[RENYI_ORDERS];
	int			count = renyi_orders(orders);
	double		best = DBL_MAX;
	int			i;

	for (i = 0; i < count; i++)
	{
		double		alpha = orders[i];
		double		r = exp(-gd->lambda * gd->step_size * steps / alpha) *
			rows_changed * rows_changed * renyi_row_divergence(alpha, gd->lambda, gd->noise, n);
		double		eps = renyi_to_epsilon(r, alpha, delta);

		if (eps < best)
		{
			best = eps;
			if (order)
				*order = alpha;
		}
	}
	return Max(best, 0.0);
}

/*
 * K(S): the fewest steps after which S changed rows have the deletion
 * guarantee eps at delta over n rows, at the best order: per order alpha
 * the RDP level r_alpha that converts to eps, and
 * K_alpha = (alpha / (lambda eta)) ln(S^2 eps0(alpha) / r_alpha).  0 when
 * the DP of training already covers S rows; -1 when no order reaches eps
 * (eps too small for delta).  The result is checked against
 * renyi_epsilon.
 */
int64
renyi_steps_needed(const NoisyGdParameters *gd, double n, double rows_changed, double epsilon,
				   double delta)
{
	double		orders[RENYI_ORDERS];
	int			count = renyi_orders(orders);
	double		best = -1.0;
	int64		steps;
	int			i;

	if (rows_changed <= 0)
		return 0;
	for (i = 0; i < count; i++)
	{
		double		alpha = orders[i];
		double		r_alpha = epsilon - log((alpha - 1.0) / alpha) +
			(log(delta) + log(alpha)) / (alpha - 1.0);
		double		start = rows_changed * rows_changed *
			renyi_row_divergence(alpha, gd->lambda, gd->noise, n);
		double		k;

		if (!(r_alpha > 0.0) || !isfinite(r_alpha) || !isfinite(start))
			continue;
		k = start <= r_alpha ? 0.0 :
			alpha / (gd->lambda * gd->step_size) * log(start / r_alpha);
		if (isfinite(k) && (best < 0.0 || k < best))
			best = k;
	}
	if (!(best >= 0.0 && best <= (double) RENYI_MAX_STEPS))
		return -1;
	steps = (int64) ceil(best);
	/* the formula's rounding, either way, a few steps at most: the accountant decides */
	for (i = 0; i < RENYI_ROUNDING_STEPS && steps <= RENYI_MAX_STEPS &&
		 renyi_epsilon(gd, n, rows_changed, (double) steps, delta, NULL) > epsilon; i++)
		steps++;
	if (i == RENYI_ROUNDING_STEPS || steps > RENYI_MAX_STEPS)
		return -1;
	for (i = 0; i < RENYI_ROUNDING_STEPS && steps > 0 &&
		 renyi_epsilon(gd, n, rows_changed, (double) (steps - 1), delta, NULL) <= epsilon; i++)
		steps--;
	return steps;
}

/*
 * The least noise sigma whose training DP (one row, n rows) is within eps
 * at delta: eps0 falls as 1 / sigma^2, so bisect on log sigma between
 * RENYI_LEAST_NOISE and RENYI_MOST_NOISE.  NAN when even the most is not
 * enough (the conversion alone passes eps), or the arguments are not
 * finite and positive.
 */
double
renyi_noise_for(double lambda, double n, double epsilon, double delta)
{
	NoisyGdParameters gd = {0};
	double		lo = RENYI_LEAST_NOISE,
				hi = RENYI_MOST_NOISE;
	int			i;

	gd.lambda = lambda;
	gd.step_size = 1.0;
	gd.noise = hi;
	if (!(isfinite(lambda) && lambda > 0 && isfinite(n) && n > 0 && isfinite(epsilon)) ||
		!(renyi_epsilon(&gd, n, 1.0, 0.0, delta, NULL) <= epsilon))
		return NAN;
	for (i = 0; i < 200; i++)
	{
		double		mid = sqrt(lo * hi);

		gd.noise = mid;
		if (renyi_epsilon(&gd, n, 1.0, 0.0, delta, NULL) <= epsilon)
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

/*
 * Rows held in memory as a gradient oracle: x (n x p, row-major), targets
 * y = +-1; row_norm and margin are n doubles each, allocated here.
 */
void
noisy_gd_rows_init(NoisyGdRows *rows, const double *x, const double *y, int64 n, int p)
{
	int64		i;

	rows->x = x;
	rows->y = y;
	rows->n = n;
	rows->p = p;
	rows->row_norm = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * Max(n, 1));
	rows->margin = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * Max(n, 1));
	for (i = 0; i < n; i++)
		rows->row_norm[i] = vec_norm(x + i * p, p);
}

void
noisy_gd_rows_free(NoisyGdRows *rows)
{
	pfree(rows->row_norm);
	pfree(rows->margin);
}

/*
 * The sum of the rows' logistic gradients at theta, each clipped to norm
 * 1 (rows of norm <= 1 never are): two DGEMVs, O(n p).
 */
void
noisy_gd_rows_gradient(void *arg, const double *theta, double *gradient_sum)
{
	NoisyGdRows *rows = (NoisyGdRows *) arg;
	int64		i;

	cblas_dgemv(CblasRowMajor, CblasNoTrans, rows->n, rows->p, 1.0, rows->x, rows->p, theta, 1,
				0.0, rows->margin, 1);
	for (i = 0; i < rows->n; i++)
	{
		double		d1 = loss_d1(LOSS_LOGISTIC, rows->margin[i], rows->y[i]);
		double		norm = fabs(d1) * rows->row_norm[i];

		rows->margin[i] = norm > 1.0 ? d1 / norm : d1;
	}
	cblas_dgemv(CblasRowMajor, CblasTrans, rows->n, rows->p, 1.0, rows->x, rows->p, rows->margin, 1,
				0.0, gradient_sum, 1);
}

/*
 * steps steps of Noisy-GD over n rows from theta, in place:
 *
 *	theta <- theta - eta (g(theta) / n + lambda theta) + N(0, 2 eta sigma^2 I)
 *
 * with g the sum of the rows' gradients, from gradient.  draw fills a
 * vector with standard normal numbers, once per step (its caller may
 * check for interrupts there).  O(p) per step besides the oracle.
 */
void
noisy_gd_steps(const NoisyGdParameters *gd, double n, int p, GradientOracle gradient,
			   void *gradient_arg, double *theta, int64 steps, NoiseSource draw, void *draw_arg)
{
	double		scale = sqrt(2.0 * gd->step_size) * gd->noise;
	double	   *g = palloc(sizeof(double) * p);
	double	   *step = palloc(sizeof(double) * p);
	int64		s;

	for (s = 0; s < steps; s++)
	{
		gradient(gradient_arg, theta, g);
		draw(draw_arg, step, p);
		cblas_dscal(p, scale, step, 1);
		cblas_daxpy(p, -gd->step_size * gd->lambda, theta, 1, step, 1);
		cblas_daxpy(p, -gd->step_size / n, g, 1, step, 1);
		cblas_daxpy(p, 1.0, step, 1, theta, 1);
	}
	pfree(g);
	pfree(step);
}
