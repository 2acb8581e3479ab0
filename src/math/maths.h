/*-------------------------------------------------------------------------
 *
 * maths.h
 *	  The math layer: linear algebra, the Cholesky modifications, the losses,
 *	  the Gaussian budget, the row map, Newton's method over a pass oracle and
 *	  the held-out metrics.  Pure functions over arrays: no SPI, catalog,
 *	  executor or trigger header, and no call to any other layer.
 *
 *-------------------------------------------------------------------------
 */
#ifndef UNLEARN_MATH_H
#define UNLEARN_MATH_H

#include "unlearn.h"

/* linalg.c: thin wrappers over OpenBLAS / LAPACKE */
extern void linalg_init(void);
extern bool linalg_parallel(bool on);
extern int	linalg_threads(void);
extern bool chol_factor_packed(double *ap, int p);
extern void chol_solve_packed(const double *lp, int p, double *rhs);
extern void packed_lower_transpose_product(const double *lp, int p, double *v);
extern void packed_lower_transpose_solve(const double *lp, int p, double *v);
extern void packed_from_full(const double *full, int p, double *packed);
extern void full_from_packed(const double *packed, int p, double *full);
extern double packed_quadratic(const double *ap, int p, const double *v, double *av);
extern double packed_max_eigenvalue_bound(const double *ap, int p);
extern double vec_dot(const double *x, const double *y, int n);
extern double vec_norm(const double *v, int p);
/* cholesky_modify.c: Givens update, hyperbolic (mixed) down-date */
extern void chol_rank1_update(double *lp, int p, const double *x, double weight);
extern bool chol_rankk_downdate(double *lp, int p, const double *x, const double *weights,
								int k);
extern bool chol_refactor_modify(double *lp, int p, const double *xa, const double *ca, int na,
								 const double *xr, const double *cr, int nr);
/* loss.c */
extern double loss_value(UnlearnLoss loss, double z, double y);
extern double loss_d1(UnlearnLoss loss, double z, double y);
extern double loss_d2(UnlearnLoss loss, double z, double y);
extern double loss_gamma(UnlearnLoss loss);
extern double logistic_sigmoid(double z);
/* budget.c */
extern double gaussian_budget(double sigma, double epsilon, double delta);
extern void draw_gaussian_noise(double *b, int n, double sigma);
extern double laplace_budget(double scale, double epsilon);
extern double combine_class_spent(const double *class_spent, int k);
extern double rounding_allowance(int64 n, int p, double magnitude);
/* laplace_noise.c: pure-eps objective noise */
extern double draw_laplace_noise(double *b, int n, double scale);
/* column_map.c: the row map (see its header) */
typedef struct RowMap
{
	int			dims;
	bool		intercept;
	bool		pooled;			/* one array column: one centre and spread */
	double		scale;			/* D */
	double		intercept_scaling;	/* a */
	const double *centre;		/* per column; NULL: the identity */
	const double *spread;
	bool		impute;			/* a NaN (missing) value maps to its centre */
} RowMap;
/* a standardised coordinate is clamped to +-ROW_MAP_CLAMP (column_map.c) */
#define ROW_MAP_CLAMP 1e150
/* the map of a model trained from 0.8.0 (column_map.c), and the bounds of a stored one */
#define UNLEARN_INTERCEPT_SCALING 2.0
#define UNLEARN_SPREAD_STEPS 4
#define MAX_INTERCEPT_SCALING 16.0
#define MAX_SPREAD_STEPS 64
struct RowBatch;
extern void model_row_map(const UnlearnModel *m, RowMap *map);
extern void map_row(const RowMap *map, double *row);
extern double row_map_divisor(int p, UnlearnLoss loss);
extern int	map_columns(const UnlearnModel *m);
extern int	column_sum_width(const UnlearnModel *m);
extern void column_map_fit(UnlearnModel *m, const double *x, int64 n, int stride);
extern void column_map_fit_moments(UnlearnModel *m, const double *count, const double *mean,
								   const double *sd);
/* newton_solver.c: Algorithm 1 over a pass oracle */
typedef struct PassTerms
{
	int64		rows;
	double		loss_sum;		/* sum_i l(w.x_i, y_i) */
	double	   *gradient;		/* sum_i l'_i x_i, p */
	double	   *hessian;		/* sum_i l''_i x_i x_i', packed lower */
} PassTerms;
/*
 * the data terms of classes[0..count-1] at points[0..count-1], one pass;
 * terms[i].hessian is filled where hessian[i] (may be anyway)
 */
typedef void (*PassOracle) (void *arg, int count, const int *classes,
							const double *const *points, const bool *hessian,
							PassTerms *terms);
typedef struct NewtonProblem
{
	const char *model;
	char	  **class_names;	/* one-vs-rest: for the NOTICEs */
	int			p;
	int			nclasses;
	UnlearnLoss loss;
	double		reg;			/* Lambda */
	const double *noise;		/* b, nclasses x p */
	double		target;			/* residual at which a class stops */
	int			warning_level;
	bool		verbose;
	PassOracle	evaluate;
	/* optional: called after each pass with the largest iteration count
	 * and gradient norm of the classes still iterating */
	void		(*report) (int iteration, int classes, int classes_done,
						   double gradient_norm);
	void	   *arg;
} NewtonProblem;
extern void newton_fit(const NewtonProblem *np, double *coef, double *anchor,
					   double *factor, double *weight_bound, double *residual);
extern bool regularised_pass_terms(UnlearnLoss loss, double reg, const double *w,
								   const double *b, int p, const PassTerms *terms, double *g,
								   double *allowance, double *weight_bound, double *factor);
/* metrics.c */
typedef struct ClassificationMetrics
{
	double		accuracy;
	double		log_loss;
	double		roc_auc;		/* NaN: a class lacks positives or negatives */
	double		macro_f1;
	double	   *precision;		/* K each */
	double	   *recall;
	double	   *f1;
	int64	   *confusion;		/* K x K, row: true class, column: predicted */
} ClassificationMetrics;
typedef struct RegressionMetrics
{
	double		r2;				/* NaN for constant targets */
	double		rmse;
	double		mae;
} RegressionMetrics;
extern void classification_metrics(const int *truth, const int *predicted, const double *proba,
								   int64 n, int K, ClassificationMetrics *out);
extern void regression_metrics(const double *y, const double *pred, int64 n,
							   RegressionMetrics *out);
/* renyi.c: Noisy-GD and its Renyi accountant (see its header) */
typedef struct NoisyGdParameters
{
	double		lambda;			/* of the average form */
	double		step_size;		/* eta */
	double		noise;			/* sigma: each step adds N(0, 2 eta sigma^2 I) */
} NoisyGdParameters;
#define RENYI_ORDERS 114
#define RENYI_MAX_STEPS INT64CONST(100000000)
#define RENYI_LEAST_NOISE 1e-12
#define RENYI_MOST_NOISE 1e6
typedef void (*NoiseSource) (void *arg, double *z, int n);
/* the sum over the rows of their gradients at theta, p */
typedef void (*GradientOracle) (void *arg, const double *theta, double *gradient_sum);
typedef struct NoisyGdRows
{
	const double *x;
	const double *y;
	int64		n;
	int			p;
	double	   *row_norm;
	double	   *margin;
} NoisyGdRows;
extern int	renyi_orders(double *orders);
extern double renyi_row_divergence(double alpha, double lambda, double sigma, double n);
extern double renyi_to_epsilon(double r, double alpha, double delta);
extern double renyi_epsilon(const NoisyGdParameters *gd, double n, double rows_changed,
							double steps, double delta, double *order);
extern int64 renyi_steps_needed(const NoisyGdParameters *gd, double n, double rows_changed,
								double epsilon, double delta);
extern double renyi_noise_for(double lambda, double n, double epsilon, double delta);
extern void noisy_gd_rows_init(NoisyGdRows *rows, const double *x, const double *y, int64 n, int p);
extern void noisy_gd_rows_free(NoisyGdRows *rows);
extern void noisy_gd_rows_gradient(void *arg, const double *theta, double *gradient_sum);
extern void noisy_gd_steps(const NoisyGdParameters *gd, double n, int p, GradientOracle gradient,
						   void *gradient_arg, double *theta, int64 steps, NoiseSource draw,
						   void *draw_arg);
/* membership.c: the statistics of a membership-inference audit */
extern double normal_cdf(double z);
extern double normal_quantile(double q);
extern double beta_cdf(double x, double a, double b);
extern double beta_quantile(double q, double a, double b);
extern void clopper_pearson(int64 hits, int64 n, double *low, double *high);
extern void sort_scores(double *scores, int64 n);
extern double membership_auc(const double *pos, int64 npos, const double *neg, int64 nneg);
extern double threshold_at_fpr(const double *neg, int64 nneg, double alpha);
extern double threshold_fpr_bound(int64 nneg, double alpha);
extern int64 count_above(const double *scores, int64 n, double threshold);
extern double membership_log_ratio(double phi, double mu_out, double shift, double spread);
extern double gaussian_log_ratio(double phi, double mu_in, double sd_in, double mu_out,
								 double sd_out);
extern void packed_factor_product(const double *lp, int p, double *v);
extern bool column_map_update(UnlearnModel *m, const struct RowBatch *removed,
							  const struct RowBatch *added);
extern void column_sums_of_row(const UnlearnModel *m, const double *x, double *sums, double sign);
extern bool column_map_update_sums(UnlearnModel *m, const double *sums, int64 rows);
extern bool column_map_still_holds(const UnlearnModel *m, int64 rows_after, int64 changed);
extern double column_value_sum(const UnlearnModel *m, int c, int64 rows);

#endif							/* UNLEARN_MATH_H */
