/*-------------------------------------------------------------------------
 *
 * laplace_noise.c
 *	  Objective noise for pure eps-certified removal (Guo et al., Theorem 3
 *	  i): b in R^n with density proportional to exp(-(epsilon / eps')
 *	  ||b||).  A model with noise 'laplace' and scale sigma draws b with
 *	  density ~ exp(-||b|| / sigma), so its budget is eps' = epsilon sigma:
 *	  a release whose gradient residual is at most eps' is epsilon-certified,
 *	  with no delta.
 *
 * The density depends on ||b|| alone, so b = r u with u uniform on the
 * unit sphere (a Gaussian vector, normalised) and r with density ~ r^(n-1)
 * exp(-r / sigma): r ~ Gamma(shape n, scale sigma).  r is drawn by
 * Marsaglia and Tsang's method (ACM TOMS 26(3), 2000) for shape >= 1, from
 * pg_strong_random.  E||b|| = n sigma, against sqrt(n) sigma for the
 * Gaussian: the price of delta = 0.
 *
 *-------------------------------------------------------------------------
 */
#include "math/maths.h"

#include <math.h>

#include "port.h"

/* a uniform in (0, 1) from 53 strong random bits */
static double
strong_uniform(void)
{
	uint64		bits;

	if (!pg_strong_random(&bits, sizeof(bits)))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not generate random noise")));
	return ((double) (bits >> 11) + 0.5) / 9007199254740992.0;
}

/* r ~ Gamma(shape, 1), shape >= 1 (Marsaglia and Tsang) */
static double
gamma_variate(double shape)
{
	double		d = shape - 1.0 / 3.0;
	double		c = 1.0 / sqrt(9.0 * d);

	for (;;)
	{
		double		x,
					v,
					u;

		draw_gaussian_noise(&x, 1, 1.0);
		v = 1.0 + c * x;
		if (v <= 0.0)
			continue;
		v = v * v * v;
		u = strong_uniform();
		if (log(u) < 0.5 * x * x + d - d * v + d * log(v))
			return d * v;
	}
}

/*
 * b with density ~ exp(-||b|| / scale) on R^n; returns ||b||, the radius
 * drawn (the one the direction is scaled to).
 */
double
draw_laplace_noise(double *b, int n, double scale)
{
	double		radius;
	double		norm;
	int			i;

	Assert(n >= 1);
	do
	{
		draw_gaussian_noise(b, n, 1.0);
		norm = vec_norm(b, n);
	} while (!(norm > 0.0));
	radius = scale * gamma_variate((double) n);
	for (i = 0; i < n; i++)
		b[i] *= radius / norm;
	return radius;
}
