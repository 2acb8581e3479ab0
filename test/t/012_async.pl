# Asynchronous removal ("removal": "async") with the maintenance worker:
#
# 1. the worker applies a queue within unlearn.apply_delay, unasked, and
#    unlearn_wait returns once it has; least squares then equals a refit
#    to 1e-9 and the logistic model is certified;
# 2. a failed apply (the worker's time limit on one model) leaves the queue
#    intact, shows its error in unlearn.status, and is retried: once the
#    limit is lifted the queue is applied and the error cleared;
# 3. the worker killed by its pid in the middle of an apply (it has read
#    the queue and waits for the model's row) loses nothing: the next
#    apply takes the whole queue, once;
# 4. a crash with changes queued, and the worker off, loses nothing: after
#    the restart the worker applies them;
# 5. the locks an apply holds keep no writer of the table waiting.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use UnlearnNode;
use Test::More;

my $node = unlearn_node('async');
$node->append_conf('postgresql.conf', qq{
unlearn.worker = on
unlearn.worker_naptime = 1
unlearn.apply_delay = 200
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION unlearn');
$node->safe_psql('postgres', $DIGITS_SQL . q{
CREATE TABLE ones AS SELECT id, label::float8 AS target, label = 1 AS one, pixels FROM digits;
ALTER TABLE ones ADD PRIMARY KEY (id);
SELECT count(*) FROM unlearn_train('ls', 'ones', 'target', '{pixels}', loss => 'squared', sigma => 0,
                                   options => '{"removal": "async"}');
SELECT count(*) FROM unlearn_train('lg', 'ones', 'one', '{pixels}', sigma => 1,
                                   options => '{"removal": "async"}');
});

# every model reflects the table: least squares a refit to 1e-9 relative,
# the logistic model certified against its exact residual
my $holds = q{
SELECT bool_and(m.rows = (SELECT count(*) FROM ones) AND v.certified AND
                (m.loss <> 'squared' OR v.retrain_distance <=
                 1e-9 * (SELECT sqrt(sum(c ^ 2)) FROM unnest(unlearn_coef(m.model)) c)))
FROM unlearn.models m, unlearn_verify(m.model) v WHERE m.model IN ('ls', 'lg')};
my $detail = q{
SELECT string_agg(format('%s rows %s of %s certified %s distance %s of %s', m.model, m.rows,
                         (SELECT count(*) FROM ones), v.certified, v.retrain_distance,
                         (SELECT sqrt(sum(c ^ 2)) FROM unnest(unlearn_coef(m.model)) c)), '; ')
FROM unlearn.models m, unlearn_verify(m.model) v WHERE m.model IN ('ls', 'lg')};
my $pending = q{SELECT coalesce(sum(pending), 0) FROM unlearn.status};
my $applied = q{SELECT coalesce(sum(pending), 0) = 0 FROM unlearn.status};

# 1.
$node->safe_psql('postgres', 'DELETE FROM ones WHERE id % 10 = 0');
is($node->safe_psql('postgres', q{SELECT unlearn_wait('ls', 60) AND unlearn_wait('lg', 60)}), 't',
	'unlearn_wait returns once the worker has applied the queue');
is($node->safe_psql('postgres', $pending), '0', 'the queue is empty');
is($node->safe_psql('postgres', $holds), 't', 'least squares is a refit, the logistic model certified');
$node->safe_psql('postgres', q{
DELETE FROM ones WHERE id % 10 = 1;
UPDATE ones SET target = target + 1 WHERE id % 10 = 2;
INSERT INTO ones SELECT id + 5000, target, one, pixels FROM ones WHERE id < 100;
});
ok($node->poll_query_until('postgres', $applied), 'the worker applies a queue nobody waits for');
is($node->safe_psql('postgres', $holds), 't', 'and the models reflect the table');
is($node->safe_psql('postgres', q{
SELECT count(*) FILTER (WHERE operation = 'apply') > 0 AND bool_and(operation IN ('train', 'apply', 'rebuild'))
FROM unlearn.ledger}), 't', 'the ledger shows the applies');

# 2. a time limit of 1 ms on one model's work fails the apply of a model
# whose matrices must be rebuilt from 36,000 rows
$node->safe_psql('postgres', q{
CREATE TABLE big AS SELECT g * 10000 + id AS id, label::float8 AS target, pixels
FROM digits, generate_series(1, 20) g;
ALTER TABLE big ADD PRIMARY KEY (id);
SELECT count(*) FROM unlearn_train('big', 'big', 'target', '{pixels}', loss => 'squared', sigma => 0,
                                   options => '{"removal": "async"}');
SELECT unlearn_evict('big');
ALTER SYSTEM SET unlearn.worker_model_timeout = 1;
SELECT pg_reload_conf();
});
my $big_queued = $node->safe_psql('postgres', q{SELECT count(*) FROM big WHERE id % 7 = 0});
$node->safe_psql('postgres', 'DELETE FROM big WHERE id % 7 = 0');
ok($node->poll_query_until('postgres', q{SELECT apply_error IS NOT NULL FROM unlearn.status WHERE model = 'big'}),
	'a failed apply shows its error');
is($node->safe_psql('postgres', q{
SELECT s.apply_error, pending, m.apply_failures > 0
FROM unlearn.status s JOIN unlearn.models m USING (model) WHERE model = 'big'}),
	"canceling statement due to statement timeout|$big_queued|t", 'the queue is intact, the failures counted');
$node->safe_psql('postgres', q{
ALTER SYSTEM RESET unlearn.worker_model_timeout;
SELECT pg_reload_conf();
});
ok($node->poll_query_until('postgres',
	q{SELECT pending = 0 AND apply_error IS NULL FROM unlearn.status WHERE model = 'big'}),
	'once the limit is lifted the worker applies the queue and clears the error');
is($node->safe_psql('postgres', q{
SELECT m.rows = (SELECT count(*) FROM big) AND v.retrain_distance <=
       1e-9 * (SELECT sqrt(sum(c ^ 2)) FROM unnest(unlearn_coef('big')) c) AND m.apply_failures = 0
FROM unlearn.models m, unlearn_verify('big') v WHERE m.model = 'big'}), 't', 'a refit to 1e-9');

# 3. the worker's apply of 'ls' reads the queue, then waits for the model's
# row, which another session holds locked (up to its lock timeout; then it
# tries again), and is killed while it waits
$node->safe_psql('postgres', q{ALTER SYSTEM SET unlearn.worker = off; SELECT pg_reload_conf();});
my $applies = q{SELECT count(*) FROM unlearn.ledger WHERE operation = 'apply'};
my $applies_before = $node->safe_psql('postgres', $applies);
$node->safe_psql('postgres', 'DELETE FROM ones WHERE id % 10 = 3');
my $queued = $node->safe_psql('postgres', q{SELECT pending FROM unlearn.status WHERE model = 'ls'});
my $locker = $node->background_psql('postgres');
$locker->query_safe('BEGIN');
$locker->query_safe(q{SELECT 1 FROM unlearn.models WHERE model IN ('ls', 'lg') FOR NO KEY UPDATE});
$node->safe_psql('postgres', q{ALTER SYSTEM RESET unlearn.worker; SELECT pg_reload_conf();});
my $killed = 0;
for (my $i = 0; $i < 600 && !$killed; $i++)
{
	$killed = $node->safe_psql('postgres', q{
SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE backend_type = 'unlearn worker' AND wait_event_type = 'Lock' AND query IN ('ls', 'lg')});
	select(undef, undef, undef, 0.05) unless $killed;
}
ok($killed, 'the worker was killed in the middle of an apply');
is($node->safe_psql('postgres', q{SELECT pending FROM unlearn.status WHERE model = 'ls'}), $queued,
	'the queue is as it was');
$locker->query_safe('COMMIT');
$locker->quit;
ok($node->poll_query_until('postgres', $applied), 'the next apply takes the queue');
is($node->safe_psql('postgres', $holds), 't', 'once: least squares is a refit, the logistic model certified')
  or diag($node->safe_psql('postgres', $detail));
is($node->safe_psql('postgres', $applies) - $applies_before, 2, 'one apply line per model');

# 4. a crash with changes queued and the worker off
$node->safe_psql('postgres', q{ALTER SYSTEM SET unlearn.worker = off; SELECT pg_reload_conf();});
$node->safe_psql('postgres', q{
DELETE FROM ones WHERE id % 10 = 4;
INSERT INTO ones SELECT id + 9000, target, one, pixels FROM ones WHERE id < 50;
});
$queued = $node->safe_psql('postgres', q{SELECT pending FROM unlearn.status WHERE model = 'ls'});
cmp_ok($queued, '>', 100, 'changes are queued');
$node->stop('immediate');
$node->start;
is($node->safe_psql('postgres', q{SELECT pending FROM unlearn.status WHERE model = 'ls'}), $queued,
	'the queue survived the crash');
$node->safe_psql('postgres', q{ALTER SYSTEM RESET unlearn.worker; SELECT pg_reload_conf();});
ok($node->poll_query_until('postgres', $applied), 'after the restart the worker applies the queue');
is($node->safe_psql('postgres', $holds), 't', 'least squares is a refit, the logistic model certified');

# 5. what an apply holds keeps no writer waiting: the model's row (FOR NO
# KEY UPDATE; a queue entry has no foreign key to it) and the table read;
# a writer with a lock timeout of 200 ms deletes and queues while another
# session holds them
$node->safe_psql('postgres', q{ALTER SYSTEM SET unlearn.worker = off; SELECT pg_reload_conf();});
$locker = $node->background_psql('postgres');
$locker->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$locker->query_safe(q{SELECT count(*) FROM ones});
$locker->query_safe(q{SELECT 1 FROM unlearn.models WHERE model IN ('ls', 'lg') FOR NO KEY UPDATE});
my ($ret, $out, $err) = $node->psql('postgres', q{
SET lock_timeout = '200ms';
DELETE FROM ones WHERE id % 10 = 5;
SELECT pending > 0 FROM unlearn.status WHERE model = 'ls';});
is($ret, 0, 'a writer is not kept waiting by the locks of an apply') or diag($err);
is($out, 't', 'and queues its change');
$locker->query_safe('COMMIT');
$locker->quit;
$node->safe_psql('postgres', q{ALTER SYSTEM RESET unlearn.worker; SELECT pg_reload_conf();});
ok($node->poll_query_until('postgres', $applied), 'the worker applies it');
is($node->safe_psql('postgres', $holds), 't', 'least squares is a refit, the logistic model certified');

$node->stop;
done_testing();
