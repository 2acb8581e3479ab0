# Training by aggregate passes in parallel workers: with parallel query
# forced, the passes of a training (moments, Newton) and of a DELETE's
# retrain run as Partial Aggregate under Gather (read from auto_explain's
# plans of the nested statements); without noise (sigma 0, so that two
# trainings have the same objective) the model equals the one trained
# serially to 1e-9; another session follows a parallel training in
# unlearn.progress; and a cancelled training leaves no model behind and no
# progress line.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use UnlearnNode;
use Test::More;

my $node = unlearn_node('parallel');
$node->append_conf('postgresql.conf', 'max_worker_processes = 8');
$node->start;

$node->safe_psql('postgres', 'CREATE EXTENSION unlearn');
$node->safe_psql('postgres', $DIGITS_SQL . q{
CREATE TABLE fives AS SELECT id, label = 5 AS five, pixels FROM digits;
ALTER TABLE fives ADD PRIMARY KEY (id);
CREATE TABLE classes10 AS SELECT id, label, pixels FROM digits;
ALTER TABLE classes10 ADD PRIMARY KEY (id);
});

my $serial = 'SET max_parallel_workers_per_gather = 0;';
my $parallel = q{
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
LOAD 'auto_explain';
SET auto_explain.log_min_duration = 0;
SET auto_explain.log_nested_statements = on;
SET auto_explain.log_level = notice;
};

# the largest difference between two models' weights, relative to the largest weight
my $distance = q{
SELECT max(abs(a.c - b.c)) / max(abs(a.c))
FROM unnest((SELECT coef FROM unlearn.models WHERE model = '%s')) WITH ORDINALITY a(c, i)
JOIN unnest((SELECT coef FROM unlearn.models WHERE model = '%s')) WITH ORDINALITY b(c, i) USING (i)};

for my $case (['five', 'fives', 'five', ''], ['ovr', 'classes10', 'label', q{, options => '{"bound": "guo"}'}])
{
	my ($name, $table, $label, $options) = @$case;
	my $train = "SELECT model FROM unlearn_train('%s', '$table', '$label', '{pixels}', sigma => 0, lambda => 1e-3$options)";

	$node->safe_psql('postgres', $serial . sprintf($train, "${name}_serial"));
	my ($ret, $out, $err) = $node->psql('postgres', $parallel . sprintf($train, "${name}_parallel"));
	is($ret, 0, "$name: the parallel training succeeds");

	# one plan per pass; the Newton passes aggregate unlearn.stats states
	my @plans = split /NOTICE:  duration: /, $err;
	my @passes = grep { /_pass_hessian|_pass_gradient/ } @plans;
	cmp_ok(scalar(@passes), '>=', 2, "$name: " . scalar(@passes) . ' Newton passes');
	cmp_ok(scalar(grep { /_pass_gradient/ } @passes), '>=', 1,
		"$name: the last Newton passes take the gradient alone");
	is(scalar(grep { /Finalize Aggregate.*Gather.*Partial Aggregate.*Parallel Seq Scan/s } @passes),
		scalar(@passes), "$name: each Newton pass is Partial Aggregate under Gather");
	ok(scalar(grep { /_column_moments.*Gather.*Partial Aggregate/s } @plans) == 1,
		"$name: the moments pass too");

	cmp_ok($node->safe_psql('postgres', sprintf($distance, "${name}_serial", "${name}_parallel")),
		'<=', 1e-9, "$name: the parallel model equals the serial one to 1e-9");
	is($node->safe_psql('postgres', "SELECT spent > 0 FROM unlearn.models WHERE model = '${name}_parallel'"),
		't', "$name: its training residual is spent");
}

# a DELETE whose class loses its last rows retrains in the trigger, by parallel passes
my ($ret, $out, $err) = $node->psql('postgres', $parallel . q{
SET client_min_messages = notice;
DELETE FROM classes10 WHERE label = 9;
});
is($ret, 0, 'the DELETE that retrains succeeds');
like($err, qr/retraining model "ovr_parallel"/, 'the model retrains in the trigger');
ok(scalar(grep { /_pass_hessian.*Gather.*Partial Aggregate/s } split /NOTICE:  duration: /, $err) >= 2,
	"the trigger's retrain runs its passes in parallel workers");
is($node->safe_psql('postgres', q{
	SELECT string_agg(rows || ':' || array_length(classes, 1), ',' ORDER BY model)
	FROM unlearn.models WHERE model LIKE 'ovr%'}), '1617:9,1617:9',
	'both models reflect the rows left, with the class gone');
cmp_ok($node->safe_psql('postgres', sprintf($distance, 'ovr_serial', 'ovr_parallel')),
	'<=', 1e-9, 'the two retrains agree to 1e-9');

# progress: another session polls unlearn.progress while a parallel
# training runs.  Each sample must be consistent (rows read within the
# model's rows, passes in order, known phases), and some sample must catch
# a Newton pass part-way, with rows counted by the leader and its workers
# and the gradient norm of an earlier pass.  The training takes seconds and
# the polls milliseconds, so a run without such a sample is a failure to
# report progress, not the machine's speed.
$node->safe_psql('postgres', q{
CREATE TABLE watched AS SELECT g AS id, random() < 0.5 AS y,
	(SELECT array_agg(random()) FROM generate_series(1, 50) WHERE g > 0) AS x
FROM generate_series(1, 600000) g;
VACUUM ANALYZE watched;
});
my $trainer = $node->background_psql('postgres');
my $trainer_pid = $trainer->query_safe('SELECT pg_backend_pid()');
$trainer->query_safe($parallel =~ s/LOAD 'auto_explain';.*//sr);
$trainer->query_until(qr/training/, q{
\echo training
SELECT model FROM unlearn_train('watched', 'watched', 'y', '{x}', sigma => 0);
});
my $poller = $node->background_psql('postgres');
my (@samples, $seen, $gone);
for (my $i = 0; $i < 60000 && !$gone; $i++)
{
	my $line = $poller->query_safe(qq{
		SELECT command, phase, pass, rows_done, coalesce(rows_total, -1),
			coalesce(iteration, -1), coalesce(gradient_norm, -1)
		FROM unlearn.progress WHERE pid = $trainer_pid});
	if ($line ne '') { push @samples, [ split /\|/, $line ]; $seen = 1; }
	elsif ($seen) { $gone = 1; }
}
$trainer->quit;
ok($gone, 'the training was listed in unlearn.progress, then left it');
my %phases = map { $_ => 1 } ('waiting for table lock', 'census', 'column moments',
	'gradient and Hessian', 'gradient', 'measuring fit');
my ($bad, $last_pass, $mid_pass) = (0, 0, 0);
for my $s (@samples)
{
	my ($command, $phase, $pass, $done, $total, $iteration, $norm) = @$s;
	$bad++ unless $command eq 'training' && $phases{$phase} && $pass >= $last_pass
		&& ($total < 0 || $done <= $total);
	$last_pass = $pass;
	$mid_pass++ if $phase =~ /^gradient/ && $total == 600000
		&& $done > 0 && $done < $total && $iteration >= 0 && $norm > 0;
}
is($bad, 0, scalar(@samples) . ' samples, each consistent');
cmp_ok($mid_pass, '>', 0, 'some caught a Newton pass part-way, with a gradient norm');
is($node->safe_psql('postgres', q{SELECT rows FROM unlearn.models WHERE model = 'watched'}),
	'600000', 'and the training completed');

# cancelling: a training stopped by statement_timeout leaves no model and no ledger entry
$node->safe_psql('postgres', q{
CREATE TABLE wide AS SELECT g AS id, random() < 0.5 AS y,
	(SELECT array_agg(random()) FROM generate_series(1, 40) WHERE g > 0) AS x
FROM generate_series(1, 200000) g;
});
($ret, $out, $err) = $node->psql('postgres', q{
SET statement_timeout = '100ms';
SELECT model FROM unlearn_train('wide', 'wide', 'y', '{x}');
});
like($err, qr/canceling statement due to statement timeout/, 'the training is cancelled');
is($node->safe_psql('postgres', q{
	SELECT (SELECT count(*) FROM unlearn.models WHERE model = 'wide') +
		(SELECT count(*) FROM unlearn.ledger WHERE model = 'wide')}), '0',
	'and leaves no model behind');
# the session that was cancelled lives on, without a progress line, also
# after a cancel inside a savepoint
($ret, $out, $err) = $node->psql('postgres', q{
SET statement_timeout = '100ms';
SELECT model FROM unlearn_train('wide', 'wide', 'y', '{x}');
SELECT 'after abort', count(*) FROM unlearn.progress WHERE pid = pg_backend_pid();
BEGIN;
SAVEPOINT s;
SELECT model FROM unlearn_train('wide', 'wide', 'y', '{x}');
ROLLBACK TO SAVEPOINT s;
SELECT 'after rollback to savepoint', count(*) FROM unlearn.progress WHERE pid = pg_backend_pid();
COMMIT;
}, on_error_stop => 0);
is($out, "after abort|0\nafter rollback to savepoint|0",
	'a cancelled training leaves no progress line in its session');
is($node->safe_psql('postgres', q{SELECT rows FROM unlearn_train('wide', 'wide', 'y', '{x}')}),
	'200000', 'the same training then succeeds');

$node->stop;
done_testing();
