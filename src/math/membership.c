/*-------------------------------------------------------------------------
 *
 * membership.c
 *	  The statistics of a membership-inference audit: the normal and beta
 *	  distributions, Clopper-Pearson intervals, ROC AUC and the true
 *	  positive rate at a false positive rate fixed on the negatives.
 *
 * Scores are "higher means member".  A population of scores is tested
 * against negatives (canaries the model never saw): at FPR alpha the
 * threshold is the (floor(alpha * n_neg) + 1)-th largest negative, and a
 * positive counts only when strictly above it, so ties never raise the
 * TPR and the achieved FPR is at most alpha.
 *
 *-------------------------------------------------------------------------
 */
#include "math/maths.h"

#include <float.h>
#include <math.h>

#include <cblas.h>

double
normal_cdf(double z)
{
	return 0.5 * erfc(-z / M_SQRT2);
}

/* Phi^-1(q) for 0 < q < 1: bisection to the last bit */
double
normal_quantile(double q)
{
	double		lo = -40.0,
				hi = 40.0;
	int			i;

	if (!(q > 0.0 && q < 1.0))
		return q <= 0.0 ? -INFINITY : INFINITY;
	for (i = 0; i < 200 && hi - lo > 0.0; i++)
	{
		double		mid = 0.5 * (lo + hi);

		if (mid == lo || mid == hi)
			break;
		if (normal_cdf(mid) < q)
			lo = mid;
		else
			hi = mid;
	}
	return 0.5 * (lo + hi);
}

/* one term of the modified Lentz method: c and d advance, f takes the step */
static double
lentz_term(double coefficient, double *c, double *d)
{
	const double tiny = 1e-300;

	*d = 1.0 + coefficient * *d;
	*c = 1.0 + coefficient / *c;
	if (fabs(*d) < tiny)
		*d = tiny;
	if (fabs(*c) < tiny)
		*c = tiny;
	*d = 1.0 / *d;
	return *d * *c;
}

/* the continued fraction of I_x(a, b), evaluated by the modified Lentz method */
static double
beta_fraction(double x, double a, double b)
{
	double		c = 1.0,
				d = 1.0 - (a + b) * x / (a + 1.0),
				f;
	int			m;

	if (fabs(d) < 1e-300)
		d = 1e-300;
	d = 1.0 / d;
	f = d;
	for (m = 1; m <= 10000; m++)
	{
		double		step;

		f *= lentz_term(m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m)), &c, &d);
		step = lentz_term(-(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)), &c, &d);
		f *= step;
		if (fabs(step - 1.0) < 4.0 * DBL_EPSILON)
			break;
	}
	return f;
}

/* the regularised incomplete beta function I_x(a, b), a, b > 0 */
double
beta_cdf(double x, double a, double b)
{
	double		front;

	if (x <= 0.0)
		return 0.0;
	if (x >= 1.0)
		return 1.0;
	front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
	if (x < (a + 1.0) / (a + b + 2.0))
		return front * beta_fraction(x, a, b) / a;
	return 1.0 - front * beta_fraction(1.0 - x, b, a) / b;
}

/* the q-quantile of Beta(a, b): bisection to the last bit */
double
beta_quantile(double q, double a, double b)
{
	double		lo = 0.0,
				hi = 1.0;
	int			i;

	for (i = 0; i < 2000; i++)
	{
		double		mid = 0.5 * (lo + hi);

		if (mid <= lo || mid >= hi)
			break;
		if (beta_cdf(mid, a, b) < q)
			lo = mid;
		else
			hi = mid;
	}
	return 0.5 * (lo + hi);
}

/* the exact two-sided 95% interval of a proportion of hits among n */
void
clopper_pearson(int64 hits, int64 n, double *low, double *high)
{
	if (n <= 0)
	{
		*low = 0.0;
		*high = 1.0;
		return;
	}
	*low = hits == 0 ? 0.0 : beta_quantile(0.025, (double) hits, (double) (n - hits + 1));
	*high = hits == n ? 1.0 : beta_quantile(0.975, (double) (hits + 1), (double) (n - hits));
}

static int
compare_doubles(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

/* sorts scores ascending in place (NaN is not allowed) */
void
sort_scores(double *scores, int64 n)
{
	qsort(scores, n, sizeof(double), compare_doubles);
}

/*
 * P(positive > negative) + P(tie) / 2 over all pairs; both arrays sorted
 * ascending.  NaN without a positive or a negative.
 */
double
membership_auc(const double *pos, int64 npos, const double *neg, int64 nneg)
{
	int64		i,
				below = 0,
				equal_end = 0;
	double		wins = 0.0;

	if (npos == 0 || nneg == 0)
		return NAN;
	for (i = 0; i < npos; i++)
	{
		while (below < nneg && neg[below] < pos[i])
			below++;
		if (equal_end < below)
			equal_end = below;
		while (equal_end < nneg && neg[equal_end] == pos[i])
			equal_end++;
		wins += (double) below + 0.5 * (double) (equal_end - below);
	}
	return wins / ((double) npos * (double) nneg);
}

/*
 * The threshold at FPR alpha on negatives sorted ascending: the
 * (floor(alpha * nneg) + 1)-th largest, or -infinity when every negative
 * may be a false positive.
 */
double
threshold_at_fpr(const double *neg, int64 nneg, double alpha)
{
	int64		allowed = (int64) floor(alpha * (double) nneg);

	if (allowed >= nneg)
		return -INFINITY;
	return neg[nneg - 1 - allowed];
}

/*
 * A 97.5% upper bound on the true false positive rate of the threshold
 * threshold_at_fpr picks from nneg negatives: it is the (k + 1)-th largest
 * of them, k = floor(alpha * nneg), so its FPR is Beta(k + 1, nneg - k).
 */
double
threshold_fpr_bound(int64 nneg, double alpha)
{
	int64		allowed = (int64) floor(alpha * (double) nneg);

	if (allowed >= nneg)
		return 1.0;
	return beta_quantile(0.975, (double) (allowed + 1), (double) (nneg - allowed));
}

/* how many of the scores are strictly above threshold */
int64
count_above(const double *scores, int64 n, double threshold)
{
	int64		i,
				hits = 0;

	for (i = 0; i < n; i++)
		hits += scores[i] > threshold;
	return hits;
}

/*
 * The log likelihood ratio of a score phi between N(mu_out + shift, s^2)
 * (member) and N(mu_out, s^2) (non-member), with s > 0.
 */
double
membership_log_ratio(double phi, double mu_out, double shift, double spread)
{
	double		s2 = Max(spread * spread, DBL_MIN);
	double		ratio = shift / s2 * (phi - mu_out - 0.5 * shift);

	/* without noise the test is certain: keep its sign, in range */
	if (isnan(ratio))
		return 0.0;
	return Max(Min(ratio, DBL_MAX), -DBL_MAX);
}

/*
 * log N(phi; mu_in, sd_in^2) - log N(phi; mu_out, sd_out^2); with equal
 * spreads, membership_log_ratio(phi, mu_out, mu_in - mu_out, sd).
 */
double
gaussian_log_ratio(double phi, double mu_in, double sd_in, double mu_out, double sd_out)
{
	double		zi,
				zo,
				ratio;

	if (sd_in == sd_out)
		return membership_log_ratio(phi, mu_out, mu_in - mu_out, sd_in);
	sd_in = Max(sd_in, DBL_MIN);
	sd_out = Max(sd_out, DBL_MIN);
	zi = (phi - mu_in) / sd_in;
	zo = (phi - mu_out) / sd_out;
	ratio = 0.5 * (zo * zo - zi * zi) + log(sd_out / sd_in);
	if (isnan(ratio))
		return 0.0;
	return Max(Min(ratio, DBL_MAX), -DBL_MAX);
}

/* v = H v for H = L L' with L the packed lower factor lp */
void
packed_factor_product(const double *lp, int p, double *v)
{
	cblas_dtpmv(CblasColMajor, CblasLower, CblasTrans, CblasNonUnit, p, lp, v, 1);
	cblas_dtpmv(CblasColMajor, CblasLower, CblasNoTrans, CblasNonUnit, p, lp, v, 1);
}
