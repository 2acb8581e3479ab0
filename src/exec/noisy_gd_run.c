/*-------------------------------------------------------------------------
 *
 * noisy_gd_run.c
 *	  Running the Noisy-GD mechanism (mechanism/noisy_gd.c) on a table:
 *	  its training, and the K(S) steps after a change, with fresh noise
 *	  from pg_strong_random in every step (draw_gaussian_noise).  When the model's rows take at
 *	  most unlearn.noisy_gd_memory (8 n p bytes) they are read into memory
 *	  once per run and each step costs O(n p) in memory; otherwise each step
 *	  is one aggregate pass over the table (train_pass.c), parallel where
 *	  the planner chooses, under one snapshot for the run.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include <limits.h>
#include <math.h>

#include "miscadmin.h"
#include "utils/guc.h"

int			unlearn_noisy_gd_memory = 262144;	/* kB */

void
noisy_gd_init(void)
{
	DefineCustomIntVariable("unlearn.noisy_gd_memory",
							"Memory a Noisy-GD run may hold its model's rows in.",
							"Rows that take more (8 bytes per weight and row) are read by one "
							"pass over the table per step instead.",
							&unlearn_noisy_gd_memory, 262144, 0, INT_MAX, PGC_USERSET,
							GUC_UNIT_KB, NULL, NULL, NULL);
}

/* the progress of a run's steps: each draws its noise once */
typedef struct StepNoise
{
	int64		steps;			/* draws so far: one per step (and the start) */
	int64		total;
} StepNoise;

/* NoiseSource: N(0, I) from pg_strong_random (draw_gaussian_noise) */
static void
strong_normal(void *arg, double *z, int n)
{
	StepNoise  *s = (StepNoise *) arg;

	CHECK_FOR_INTERRUPTS();
	if (++s->steps % 64 == 0)
		progress_phase("noisy steps", (int) Min(s->steps, INT_MAX), 1, s->total);
	draw_gaussian_noise(z, n, 1.0);
}

/* do n rows of m fit unlearn.noisy_gd_memory? */
static bool
rows_fit(UnlearnModel *m, int64 n)
{
	return (double) n * m->def.p * sizeof(double) <= (double) unlearn_noisy_gd_memory * 1024.0;
}

/*
 * The model's rows, mapped, with targets +-1 (its classes are declared:
 * one may have no row, as for a Newton model); false (and nothing
 * loaded) when they are fewer than its weights.
 */
static bool
load_rows(UnlearnModel *m, DesignMatrix *dm, bool fit)
{
	load_design(m, relation_qualified_name(m->def.source), dm);
	map_design(m, dm, fit);
	return dm->n >= m->def.p;
}

/*
 * steps steps on m's rows (from the stationary start when from_start):
 * in memory when they fit, else one pass per step.  Returns the rows the
 * steps ran on, or -1 (nothing run) when they are fewer than its weights
 * (checked in memory only: passes run on what is there).
 */
static int64
run_steps(UnlearnModel *m, int64 rows, int64 steps, bool from_start, const char *command)
{
	StepNoise	noise;
	int64		n;

	noise.steps = 0;
	noise.total = steps;
	if (rows_fit(m, rows))
	{
		DesignMatrix dm;
		NoisyGdRows held;

		if (!load_rows(m, &dm, from_start))
		{
			free_design(&dm);
			return -1;
		}
		noisy_gd_rows_init(&held, dm.x, dm.y, dm.n, m->def.p);
		noisy_gd_release(m, dm.n, noisy_gd_rows_gradient, &held, steps, from_start, strong_normal,
						 &noise, m->released.coef);
		n = dm.n;
		noisy_gd_rows_free(&held);
		free_design(&dm);
	}
	else
	{
		void	   *passes = gradient_passes_begin(m, command);

		noisy_gd_release(m, rows, gradient_pass, passes, steps, from_start, strong_normal,
						 &noise, m->released.coef);
		n = gradient_pass_rows(passes);
		gradient_passes_end(passes);
	}
	m->released.gd_steps += steps;
	return n;
}

/*
 * Train a Noisy-GD model (classes chosen, p, Lambda and its rows counted,
 * as retrain_model leaves them): choose its parameters for the rows
 * (noisy_gd_choose), then run the training steps from the stationary
 * start.  Nothing is kept but w and the public figures.  spent, the
 * largest deletion epsilon of any change, carries over a retraining: the
 * releases before it stay as they were.
 */
void
noisy_gd_train(UnlearnModel *m, bool verbose)
{
	int64		n = m->released.rows;

	noisy_gd_choose(m, n);
	m->released.gd_steps = 0;
	m->released.coef = palloc0(sizeof(double) * m->def.p);
	/* the rows read are what it reflects (the census counted the same rows) */
	n = run_steps(m, n, m->def.training_steps, true, "training");
	if (n >= 0)
		m->released.rows = m->released.trained_rows = n;
	m->released.fewest_rows = m->released.rows;
	if (verbose)
		ereport(NOTICE,
				(errmsg("Noisy-GD: %lld steps of size %.4g with noise %.4g on %lld rows",
						(long long) m->def.training_steps, m->def.step_size, m->def.sigma,
						(long long) n)));
}

/*
 * A change of the model's rows (m->released.rows already counts the rows
 * after it): rows_changed rows replaced (a deletion or an insertion counts
 * as one).  Runs K(S) steps on the rows after it and returns the deletion
 * epsilon the change reached, or -1 when it needs a training instead: K(S)
 * is unreachable or not below the training's steps, or the rows read are
 * not the rows counted.
 */
double
noisy_gd_apply_change(UnlearnModel *m, int64 rows_changed)
{
	int64		steps;
	double		eps;

	m->released.fewest_rows = Min(m->released.fewest_rows, m->released.rows);
	steps = noisy_gd_change_steps(m, rows_changed);
	if (steps < 0 || steps >= m->def.training_steps)
		return -1.0;
	/* a count gone astray: a training recounts */
	if (steps > 0 && run_steps(m, m->released.rows, steps, false, "noisy steps") != m->released.rows)
		return -1.0;
	eps = noisy_gd_change_epsilon(m, rows_changed, steps);
	m->released.spent = Max(m->released.spent, eps);
	return eps;
}
