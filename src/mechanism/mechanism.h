/*-------------------------------------------------------------------------
 *
 * mechanism.h
 *	  The mechanism layer: how a model forgets.  A mechanism takes a
 *	  statement's rows and the model's secret state and returns the new
 *	  weights and what the change spent; it reads no table and no catalog
 *	  (exec/maintain.c does, around it: the passes of a training, a
 *	  re-anchoring or a rebuild, the budget rule's retrain or suspension,
 *	  and writing the model).  Calls go to the math layer only.
 *
 * The mechanisms, one file each, listed in registry.c:
 *
 *	newton	(newton.c) Guo et al.'s certified Newton removal, logistic loss
 *	exact	(exact.c) least squares, whose Newton update is exact
 *	noisy_gd (noisy_gd.c) Noisy-GD (seed 002): noisy steps on the rows
 *			after each change, no state but w
 *	fisher	(fisher.c) newton's steps without objective noise, each release
 *			scrubbed with noise shaped by H and bounded in nats (seed 001)
 *
 * cohort.c erases a whole cohort for newton and exact, each with its own
 * bound of a step.
 *
 * newton and exact keep the same state (unlearn.h: w, b, the anchor w0,
 * the factor of H, C per class, K' for the guo bound) and share the
 * Newton update of step.c, each with its own bound of a step.  noisy_gd
 * has no apply: a change runs noisy_gd_release on the rows after it,
 * which exec/maintain.c reads.
 *
 *-------------------------------------------------------------------------
 */
#ifndef UNLEARN_MECHANISM_H
#define UNLEARN_MECHANISM_H

#include "math/maths.h"

/* a statement's rows with their targets, per class */
typedef struct StepRows
{
	int			count;
	const double *x;			/* count * p */
	double	   *y;				/* binary / squared target */
	int		   *cls;			/* class index (one-vs-rest) */
} StepRows;

/*
 * A removal mechanism.
 *
 *	limit	the most the spent budget beta may reach before the budget rule
 *			re-anchors, retrains or suspends (Algorithm 2)
 *	apply	(NULL for noisy_gd) one statement's rows: rems leave, adds enter; w and the state
 *			move, and each class's bound of what the change added to the
 *			gradient residual goes to statement_bound.  Returns false if
 *			the state lost its numerical footing (the caller retrains).
 *	tpr_ceiling	the most a membership attack may reach at false positive
 *			rate fpr against a row the mechanism removed, if its
 *			certificate holds (api/audit.c reports it beside what the
 *			attack reached)
 *	erase	(NULL for noisy_gd) erase a whole cohort from its statistics
 *			alone (cohort.c): w and the state move as apply's would for
 *			the cohort's rows, each class's bound goes to statement_bound;
 *			false if H - H_c is not positive definite
 *	release	(NULL: w is published as it is) write the weights to publish
 *			for the current w and state into published, and return the
 *			release's bound in nats (fisher)
 *	margin_variance	the variance of x'w over the mechanism's noise, given
 *			v = H^-1 x (H the Hessian at the optimum): the closed-form
 *			attackers' spread
 *
 * Training (Algorithm 1, exec/train_pass.c over math/newton_solver.c),
 * re-anchoring and verification (api/verify.c: residual <= spent <=
 * limit) are the same for both mechanisms today.
 */
typedef struct Mechanism
{
	const char *name;
	double		(*limit) (UnlearnModel *m);
	bool		(*apply) (UnlearnModel *m, const StepRows *rems, const StepRows *adds,
						  double *statement_bound);
	bool		(*erase) (UnlearnModel *m, const CohortStats *cs, double *statement_bound);
	double		(*release) (UnlearnModel *m, double *published);
	double		(*tpr_ceiling) (const UnlearnModel *m, double fpr);
	double		(*margin_variance) (const UnlearnModel *m, const double *x, const double *v);
} Mechanism;

extern const Mechanism newton_mechanism;
extern const Mechanism exact_mechanism;
extern const Mechanism noisy_gd_mechanism;
extern const Mechanism fisher_mechanism;

/* fisher.c */
extern double fisher_budget(double reg, double nats);

/* noisy_gd.c */
extern double noisy_gd_largest_step(double lambda);
extern void noisy_gd_choose(UnlearnModel *m, int64 n);
extern int64 noisy_gd_change_steps(const UnlearnModel *m, int64 rows_changed);
extern double noisy_gd_change_epsilon(const UnlearnModel *m, int64 rows_changed, int64 steps);
extern double noisy_gd_dp_epsilon(const UnlearnModel *m);
extern double noisy_gd_training_epsilon(const UnlearnModel *m, int64 n);
extern void noisy_gd_release(const UnlearnModel *m, int64 n, GradientOracle gradient,
							 void *gradient_arg, int64 steps, bool from_start, NoiseSource draw,
							 void *draw_arg, double *w);

/* registry.c: the mechanism of a model, and the budget rule */
extern const Mechanism *mechanism_for(const UnlearnModel *m);
extern double budget_limit(UnlearnModel *m);
extern bool budget_exceeded(UnlearnModel *m, const double *class_spent_after);
extern bool training_exceeds_budget(UnlearnModel *m);
extern double removal_ceiling(const UnlearnModel *m, double fpr);
extern double audit_tpr_ceiling(const UnlearnModel *m, double fpr);
extern double newton_margin_variance(const UnlearnModel *m, const double *x, const double *v);
extern double objective_budget(const UnlearnModel *m);
extern void draw_objective_noise(UnlearnModel *m);
extern void release_weights(UnlearnModel *m);

/* step.c: the Newton update that newton and exact share */

/*
 * Per-statement quantities kept up to date across steps so that a step
 * makes as few passes over the O(p^2) matrices as possible:
 *	drift_prod[k] = K' (w_k - w0_k)		(one DSPMV per class per statement)
 *	factor_norm2[k] = ||L_k||_F^2 = trace(H_k)
 */
typedef struct StepCache
{
	double	   *drift_prod;
	double	   *factor_norm2;
} StepCache;

/* what a mechanism's bound of one class's step sees */
typedef struct StepBoundInput
{
	int			k;				/* the class */
	const StepRows *rems;		/* removed rows [rem_from, +rem_count) */
	int			rem_from;
	int			rem_count;
	const StepRows *adds;		/* added rows [add_from, +add_count) */
	int			add_from;
	int			add_count;
	double	   *w;				/* w_k before the step */
	const double *w0;			/* the anchor of class k */
	const double *v;			/* the step, H^{-1} Delta */
	double	   *work;			/* two p-vectors of scratch */
	double	   *work2;
	double		gamma_p;		/* p eps / (1 - p eps) */
} StepBoundInput;
typedef double (*StepBoundFunction) (UnlearnModel *m, StepCache *cache,
									 const StepBoundInput *in);

extern void step_rows_prepare(UnlearnModel *m, RowBatch *batch, StepRows *rows);
extern double row_target(UnlearnModel *m, const StepRows *rows, int i, int k);
extern void accumulate_delta(UnlearnModel *m, const StepRows *rows, int from, int count, int k,
							 const double *w, double sign, double *delta);
extern double delta_magnitude(UnlearnModel *m, const StepRows *rows, int from, int count, int k,
							  const double *w);
extern bool newton_update(UnlearnModel *m, const StepRows *rems, const StepRows *adds,
						  double *statement_bound, StepBoundFunction step_bound_of);
extern bool newton_move_back(UnlearnModel *m, const StepRows *rems, const StepRows *adds,
							 double *u, const double *allowance);
extern void newton_exact_remainder(UnlearnModel *m, const StepRows *rems, const StepRows *adds,
								   int k, const double *w_start, double *diff);

/* cohort.c: a cohort's statistics and its erasure */
extern double *cohort_hessian(const UnlearnModel *m, const CohortStats *cs, int k);
extern double *cohort_gradient(const UnlearnModel *m, const CohortStats *cs, int k);
extern double *cohort_label_rows(const UnlearnModel *m, const CohortStats *cs);
extern double *cohort_column_sums(const UnlearnModel *m, const CohortStats *cs);
extern Size cohort_doubles(const UnlearnModel *m);
extern void cohort_add_rows(const UnlearnModel *m, CohortStats *cs, const StepRows *rows,
							const int *index, int count, double sign);
extern bool cohort_stats_plausible(const UnlearnModel *m, const CohortStats *cs);
extern bool cohort_erase(UnlearnModel *m, const CohortStats *cs, double *statement_bound,
						 StepBoundFunction step_bound_of);

/* targets.c */
extern int	class_position(char *const *classes, int nlabels, const char *label);
extern int	label_to_target(UnlearnModel *m, const char *label, double value, double *y);

#endif							/* UNLEARN_MECHANISM_H */
