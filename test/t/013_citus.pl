# A Citus cluster over loopback: a coordinator and two workers, with Citus
# 13.2.2 built from ../shared/vendor/citus by scripts/build-citus (test/run
# runs it; without the source the test is skipped).
#   - The statistics aggregates run in two phases on a distributed table
#     (worker_partial_agg on each shard, coord_combine_agg on the
#     coordinator) and equal the aggregate over a single-node copy.
#   - A model of a hash-distributed table ("removal": "async") trains on
#     the shards and equals the single-node model; the shards' triggers
#     queue every change in the table's co-located queue: a DELETE through
#     the coordinator on both workers, 100 mixed changes (least squares
#     then equals a refit to 1e-9), a direct write to a shard on a worker.
#     A write that bypasses the shard triggers is found by unlearn_verify.
#   - Reference tables, other removals and what shards cannot decode
#     (expressions) are refused; no role but the extension writes a queue
#     or attaches the shard trigger, on any node.
#   - A trained local table cannot be distributed, nor added to Citus's
#     metadata (with citus.enable_unsafe_triggers too).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use UnlearnNode;
use Test::More;

my $sharedir = `pg_config --sharedir`;
chomp $sharedir;
if (!-f "$sharedir/extension/citus.control")
{
	if ($ENV{UNLEARN_CITUS_EXPECTED})
	{
		fail('Citus is installed (scripts/build-citus had its source)');
		done_testing();
		exit;
	}
	plan skip_all => 'Citus is not installed: scripts/build-citus builds it from ../shared/vendor/citus';
}

sub citus_node
{
	my ($name) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);

	$node->init;
	$node->append_conf('postgresql.conf', "shared_preload_libraries = 'citus,unlearn'");
	$node->append_conf('postgresql.conf', 'unlearn.worker = ' . ($name eq 'coordinator' ? 'on' : 'off'));
	$node->append_conf('postgresql.conf', 'max_prepared_transactions = 10');
	# Citus's connections to the node itself (shard splits) over its socket
	$node->append_conf('postgresql.conf', "citus.local_hostname = '" . $node->host . "'");
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION citus; CREATE EXTENSION unlearn');
	return $node;
}

my $coordinator = citus_node('coordinator');
my @workers = (citus_node('worker1'), citus_node('worker2'));
$coordinator->safe_psql('postgres',
	"SELECT citus_set_coordinator_host('" . $coordinator->host . "', " . $coordinator->port . ')');
$coordinator->safe_psql('postgres',
	"SELECT citus_add_node('" . $_->host . "', " . $_->port . ')') for @workers;
is($coordinator->safe_psql('postgres', 'SELECT count(*) FROM citus_get_active_worker_nodes()'),
	'2', 'a coordinator and two workers');

$coordinator->safe_psql('postgres', $DIGITS_SQL . q{
CREATE TABLE single AS SELECT id, label = 5 AS five, pixels, label::float8 AS y FROM digits;
CREATE TABLE dist (id int PRIMARY KEY, five boolean NOT NULL, pixels float8[] NOT NULL, y float8);
SELECT create_distributed_table('dist', 'id', shard_count => 8);
INSERT INTO dist SELECT * FROM single;
CREATE TABLE ref AS SELECT * FROM single;
SELECT create_reference_table('ref');
SELECT truncate_local_data_after_distributing_table('ref');
});
my $placed = $coordinator->safe_psql('postgres', q{
SELECT string_agg(n.nodeport::text || ':' || n.shards, ',' ORDER BY n.nodeport)
FROM (SELECT nodeport, count(*) AS shards FROM pg_dist_shard_placement p
	  JOIN pg_dist_shard s USING (shardid) WHERE s.logicalrelid = 'dist'::regclass
	  GROUP BY nodeport) n});
is($placed, join(',', map { $_->port . ':4' } sort { $a->port <=> $b->port } @workers),
	'the 8 shards of the distributed table are on the two workers');

# 1. the statistics aggregates, in two phases
my $w = "'{" . join(',', map { sprintf('%.6f', 0.01 * sin($_)) } 1 .. 65) . "}'::float8[]";
my $state = "unlearn_gradient_hessian_state(pixels || 1::float8, CASE WHEN five THEN 1 ELSE -1 END, $w, 'logistic')";
my $explain = $coordinator->safe_psql('postgres', "EXPLAIN (VERBOSE, COSTS OFF) SELECT $state FROM dist");
like($explain, qr/worker_partial_agg/, 'each shard computes a partial state');
like($explain, qr/coord_combine_agg/, 'the coordinator combines the states');
my $rel_diff = q{
CREATE FUNCTION pg_temp.rel_diff(a float8[], b float8[]) RETURNS float8 LANGUAGE sql AS $$
	SELECT max(abs(x - y)) / greatest(max(abs(y)), 1e-300) FROM unnest(a, b) u(x, y)
$$;};
is( $coordinator->safe_psql('postgres', $rel_diff . qq{
WITH d AS (SELECT unlearn_stats_values($state) AS v FROM dist),
s AS (SELECT unlearn_stats_values($state) AS v FROM single)
SELECT (d.v).rows = (s.v).rows
	AND pg_temp.rel_diff((d.v).gradient, (s.v).gradient) < 1e-12
	AND pg_temp.rel_diff((d.v).matrix, (s.v).matrix) < 1e-12
	AND abs((d.v).loss_sum - (s.v).loss_sum) <= 1e-12 * abs((s.v).loss_sum)
FROM d, s}),
	't', 'the gradient and Hessian state over the shards equals the single-node aggregate');
is( $coordinator->safe_psql('postgres', $rel_diff . q{
SELECT pg_temp.rel_diff(
	(SELECT (unlearn_stats_values(unlearn_gram_state(pixels || 1::float8))).matrix FROM dist),
	(SELECT (unlearn_stats_values(unlearn_gram_state(pixels || 1::float8))).matrix FROM single)) < 1e-12}),
	't', 'so does the Gram state');

# 2. what a distributed table's model cannot be
my %refusals = (
	"SELECT unlearn_train('m_ref', 'ref', 'five', '{pixels}')" =>
	  qr/cannot train a model on table "ref", which Citus manages/,
	"SELECT unlearn_train('m_imm', 'dist', 'five', '{pixels}')" =>
	  qr/a model of distributed table "dist" needs "removal": "async"/,
	"SELECT unlearn_train('m_expr', 'dist', 'five', '{id * 2}', options => '{\"removal\": \"async\"}')" =>
	  qr/a model of distributed table "dist" cannot have feature expressions/,
);
$coordinator->safe_psql('postgres', q{
CREATE DOMAIN key_domain AS int;
CREATE TABLE by_domain (id key_domain PRIMARY KEY, five boolean, pixels float8[]);
SELECT create_distributed_table('by_domain', 'id', shard_count => 4);
CREATE TABLE parted (id int, part int, five boolean, pixels float8[], PRIMARY KEY (id, part)) PARTITION BY LIST (part);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES IN (1);
SELECT create_distributed_table('parted', 'id', shard_count => 4);
CREATE ROLE tenant LOGIN;
CREATE TABLE theirs (id int PRIMARY KEY, five boolean, pixels float8[]);
SELECT create_distributed_table('theirs', 'id', shard_count => 4);
ALTER TABLE theirs OWNER TO tenant;
});
$refusals{q{SELECT unlearn_train('m_dom', 'by_domain', 'five', '{pixels}', options => '{"removal": "async"}')}} =
  qr/cannot train a model on table "by_domain", distributed by column "id" of type public.key_domain/;
$refusals{q{SELECT unlearn_train('m_part', 'parted', 'five', '{pixels}', cohort => '', options => '{"removal": "async"}')}} =
  qr/cannot train a model on distributed partitioned table "parted"/;
$refusals{q{SELECT unlearn_train('m_theirs', 'theirs', 'five', '{pixels}', options => '{"removal": "async"}')}} =
  qr/a model of distributed table "theirs" needs the table to be owned by postgres, the extension's owner/;
my ($rc, $out, $err);
for my $sql (sort keys %refusals)
{
	($rc, $out, $err) = $coordinator->psql('postgres', $sql);
	like($err, $refusals{$sql}, "refused: $sql");
}
($rc, $out, $err) = $workers[0]->psql('postgres',
	q{SELECT unlearn_train('m_w', 'dist', 'five', '{pixels}', options => '{"removal": "async"}')});
like($err, qr/a model of table "dist" is trained on Citus's coordinator/, 'a worker refuses to train');
is($coordinator->safe_psql('postgres', 'SELECT count(*) FROM unlearn.models'), '0', 'and no model is left');

# 3. training on the shards equals training on one node
my $fits = $coordinator->safe_psql('postgres', q{
SELECT string_agg(s.model || ':' || s.accuracy, ',' ORDER BY s.model)
FROM (VALUES ('dist_zero', 'dist', '{"removal": "async"}'), ('single_zero', 'single', '{}')) v(m, t, o),
	LATERAL unlearn_train(m, t, 'five', '{pixels}', sigma => 0, options => o::jsonb) s;
SELECT string_agg(s.model || ':' || s.r2, ',' ORDER BY s.model)
FROM (VALUES ('dist_lsq', 'dist', '{"removal": "async"}'), ('single_lsq', 'single', '{}')) v(m, t, o),
	LATERAL unlearn_train(m, t, 'y', '{pixels}', loss => 'squared', sigma => 0, options => o::jsonb) s;
});
my ($accuracy, $r2) = split /\n/, $fits;
like($accuracy, qr/^dist_zero:([0-9.]+),single_zero:\1$/, 'the fit measured on the shards is the single-node accuracy');
like($r2, qr/^dist_lsq:([0-9.]+),single_lsq:\1$/, 'and R2');
$coordinator->safe_psql('postgres', q{
SELECT count(*) FROM unlearn_train('dist_noisy', 'dist', 'five', '{pixels}', sigma => 1,
								   options => '{"removal": "async"}');
});
is( $coordinator->safe_psql('postgres', $rel_diff . q{
SELECT string_agg(d.model || ':' || (d.rows = s.rows AND pg_temp.rel_diff(d.coef, s.coef) < 1e-9), ',' ORDER BY d.model)
FROM unlearn.models d JOIN unlearn.models s ON s.model = replace(d.model, 'dist_', 'single_')
WHERE d.model IN ('dist_zero', 'dist_lsq')}),
	'dist_lsq:true,dist_zero:true',
	'logistic and least squares trained on the shards equal the single-node models to 1e-9');
is($coordinator->safe_psql('postgres', q{
SELECT count(*) FROM pg_trigger WHERE tgrelid = 'dist'::regclass AND tgname LIKE 'unlearn\_shard\_%'}),
	'3', 'each model has its shard trigger');

my $queue = $coordinator->safe_psql('postgres', q{
SELECT c.relname FROM pg_class c JOIN pg_dist_partition p ON p.logicalrelid = c.oid
WHERE c.relnamespace = 'unlearn'::regnamespace});
like($queue, qr/^citus_queue_[0-9a-f]{16}$/, 'the table has one distributed queue');

sub in_step
{
	my ($model) = @_;
	return $coordinator->safe_psql('postgres', qq{
SELECT m.rows = (SELECT count(*) FROM dist) AND v.certified
	   AND (m.loss <> 'squared' OR v.retrain_distance < 1e-9)
FROM unlearn.models m, unlearn_verify(m.model) v WHERE m.model = '$model'});
}

# 4. a DELETE through the coordinator, on both workers
$coordinator->safe_psql('postgres', 'DELETE FROM dist WHERE id % 10 = 3');
my $queued_rows = $coordinator->safe_psql('postgres', "SELECT count(*) FROM unlearn.$queue");
is($queued_rows, 3 * $coordinator->safe_psql('postgres', 'SELECT count(*) FROM single WHERE id % 10 = 3'),
	'the DELETE queued one entry per row and model');
cmp_ok($coordinator->safe_psql('postgres', "SELECT count(DISTINCT nodeport) FROM citus_shards WHERE table_name = 'unlearn.$queue'::regclass"),
	'==', 2, 'the queue has shards on both workers');
is($coordinator->safe_psql('postgres', "SELECT unlearn_wait('dist_noisy', 60)"), 't',
	'the maintenance worker applies the queue');
is(in_step('dist_noisy'), 't', 'the noisy model forgot the rows of both workers, certified');

# a rolled-back erasure, and one rolled back to a savepoint, queue nothing
# and leave the models as they were, bit for bit
my $models = q{SELECT string_agg(model || coef::text || spent || rows, ';' ORDER BY model) FROM unlearn.models};
my $kept = $coordinator->safe_psql('postgres', $models);
$coordinator->safe_psql('postgres', q{
BEGIN; DELETE FROM dist WHERE id % 7 = 1; ROLLBACK;
BEGIN; SAVEPOINT s; DELETE FROM dist WHERE id % 7 = 2; ROLLBACK TO s; COMMIT;
});
is($coordinator->safe_psql('postgres', "SELECT count(*) FROM unlearn.$queue"), '0', 'a rolled-back erasure queues nothing');
$coordinator->safe_psql('postgres', "SELECT unlearn_apply_pending(m) FROM unnest('{dist_lsq,dist_noisy,dist_zero}'::text[]) m");
is($coordinator->safe_psql('postgres', $models), $kept, 'and the models stay bit for bit');

# 5. 100 mixed changes, some on many shards
srand(13);
my @changes;
for my $i (1 .. 100)
{
	my $k = int(rand(1797)) + 1;
	my $r = rand();
	push @changes,
	    $r < 0.4 ? "DELETE FROM dist WHERE id = $k"
	  : $r < 0.7 ? "UPDATE dist SET y = y + 1, pixels[5] = pixels[5] + 1 WHERE id % 97 = $k % 97"
	  : $r < 0.9 ? "INSERT INTO dist SELECT id + 100000 * $i, five, pixels, y FROM dist WHERE id % 89 = $k % 89"
	  :            "UPDATE dist SET five = NOT five WHERE id = $k";
}
$coordinator->safe_psql('postgres', join(";\n", @changes));
# COPY and MERGE through the coordinator reach the shards' triggers too
my $copy = $coordinator->data_dir . '/rows.copy';
$coordinator->safe_psql('postgres', qq{
COPY (SELECT id + 900000, five, pixels, y FROM single WHERE id % 37 = 0) TO '$copy';
COPY dist (id, five, pixels, y) FROM '$copy';
CREATE TABLE mrg (id int PRIMARY KEY, y float8);
SELECT create_distributed_table('mrg', 'id', colocate_with => 'dist');
INSERT INTO mrg SELECT id, y FROM single WHERE id % 41 = 0;
MERGE INTO dist d USING mrg s ON d.id = s.id
WHEN MATCHED AND s.id % 2 = 0 THEN UPDATE SET y = d.y + 3
WHEN MATCHED THEN DELETE
WHEN NOT MATCHED THEN INSERT (id, five, pixels, y) VALUES (s.id, false, array_fill(0::float8, ARRAY[64]), s.y);
});
$coordinator->safe_psql('postgres', "SELECT unlearn_apply_pending(m) FROM unnest('{dist_lsq,dist_noisy,dist_zero}'::text[]) m");
is($coordinator->safe_psql('postgres', "SELECT count(*) FROM unlearn.$queue"), '0', 'the applies consumed the queue');
is(join(',', map { in_step($_) } qw(dist_lsq dist_noisy)), 't,t',
	'after 100 mixed changes, a COPY and a MERGE, least squares equals a refit to 1e-9, and logistic is certified');

# a shard split with entries queued: each entry goes with its row's key
$coordinator->safe_psql('postgres', q{
DELETE FROM dist WHERE id % 19 = 0;
SELECT citus_split_shard_by_split_points(s.shardid,
	ARRAY[((s.shardminvalue::bigint + s.shardmaxvalue::bigint) / 2)::text], ARRAY[n.nodeid, n.nodeid],
	'block_writes')
FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid) JOIN pg_dist_node n ON n.groupid = p.groupid
WHERE s.logicalrelid = 'dist'::regclass ORDER BY s.shardid LIMIT 1;
});
cmp_ok($coordinator->safe_psql('postgres', "SELECT count(key) FROM unlearn.$queue"), '>', 0,
	'entries with their keys are queued across a split');
$coordinator->safe_psql('postgres', "SELECT unlearn_apply_pending(m) FROM unnest('{dist_lsq,dist_noisy,dist_zero}'::text[]) m");
is(join(',', map { in_step($_) } qw(dist_lsq dist_noisy)), 't,t', 'after a shard split the models apply them');

# 6. writes on a worker's shard
my $shard = $workers[0]->safe_psql('postgres', q{
SET citus.override_table_visibility = off;
SELECT relname FROM pg_class WHERE relname ~ '^dist_[0-9]+$' AND substring(relname from '[0-9]+$')::bigint IN (SELECT shardid FROM pg_dist_shard WHERE logicalrelid = 'dist'::regclass) ORDER BY relname LIMIT 1});
$workers[0]->safe_psql('postgres', "DELETE FROM $shard WHERE id IN (SELECT id FROM $shard LIMIT 3);
UPDATE $shard SET y = y + 2 WHERE id IN (SELECT id FROM $shard LIMIT 2)");
$coordinator->safe_psql('postgres', "SELECT unlearn_apply_pending('dist_lsq')");
is(in_step('dist_lsq'), 't', 'a write on a shard, on its worker, reaches the model');
$workers[0]->safe_psql('postgres', "SET session_replication_role = replica;
DELETE FROM $shard WHERE id IN (SELECT id FROM $shard LIMIT 2)");
$coordinator->safe_psql('postgres', "SELECT unlearn_apply_pending('dist_lsq')");
is($coordinator->safe_psql('postgres', "SELECT certified FROM unlearn_verify('dist_lsq')"), 'f',
	'unlearn_verify finds a write that bypassed the shard triggers');
$coordinator->safe_psql('postgres', "SELECT count(*) FROM unlearn_retrain('dist_lsq')");
is(in_step('dist_lsq'), 't', 'a retrain brings the model back in step');

# a training holds off writes made directly on a worker's shard: one open
# while it starts is waited for, and then read, not missed
my $writer = $workers[0]->background_psql('postgres');
$writer->query_safe('SET citus.override_table_visibility = off');
$writer->query_safe('BEGIN');
$writer->query_safe("DELETE FROM $shard WHERE id IN (SELECT id FROM $shard ORDER BY id LIMIT 5)");
my $trainer = $coordinator->background_psql('postgres');
$trainer->query_until(qr/started/, q{\echo started
SELECT count(*) FROM unlearn_train('race', 'dist', 'y', '{pixels}', loss => 'squared', sigma => 0,
								   options => '{"removal": "async"}');
});
ok( $workers[0]->poll_query_until('postgres',
		q{SELECT count(*) > 0 FROM pg_locks WHERE NOT granted AND locktype = 'relation'}),
	'the training waits for the open write on the shard');
$writer->query_safe('COMMIT');
$trainer->query_safe('SELECT 1');
$trainer->quit;
$writer->quit;
is(in_step('race'), 't', 'and reflects it once it commits');

# a session's shard triggers find the queue again after it is made anew
my $app = $coordinator->background_psql('postgres');
$app->query_safe('DELETE FROM dist WHERE id % 97 = 1');
$coordinator->safe_psql('postgres', q{
SELECT unlearn_drop(model) FROM unlearn.models WHERE source = 'dist'::regclass;
SELECT count(*) FROM unlearn_train('race', 'dist', 'y', '{pixels}', loss => 'squared', sigma => 0,
								   options => '{"removal": "async"}');
});
$app->query('DELETE FROM dist WHERE id % 97 = 2');
$app->quit;
is($coordinator->safe_psql('postgres', 'SELECT count(*) FROM dist WHERE id % 97 = 2'), '0',
	'a session that wrote before the queue was made again erases after it');
$coordinator->safe_psql('postgres', "SELECT unlearn_apply_pending('race')");
is(in_step('race'), 't', 'and its model follows');
$coordinator->safe_psql('postgres', q{
SELECT count(*) FROM (VALUES ('dist_zero', '{pixels}', 'five', 'logistic', 0), ('dist_lsq', '{pixels}', 'y', 'squared', 0),
	('dist_noisy', '{pixels}', 'five', 'logistic', 1)) v(m, f, l, loss, sigma),
	LATERAL unlearn_train(m, 'dist', l, f::text[], loss => loss, sigma => sigma, options => '{"removal": "async"}') s;
SELECT unlearn_drop('race');
});

# 7. no role but the extension writes a queue or attaches the shard trigger
# (Citus creates the role on the workers too)
$coordinator->safe_psql('postgres', 'CREATE ROLE mallory LOGIN');
$coordinator->safe_psql('postgres', 'CREATE TABLE mine (id int, y float8, pixels float8[]); ALTER TABLE mine OWNER TO mallory');
($rc, $out, $err) = $workers[1]->psql('postgres', "SET citus.override_table_visibility = off;
INSERT INTO unlearn.${queue}_" . $workers[1]->safe_psql('postgres', "SET citus.override_table_visibility = off;
SELECT substring(relname from '_([0-9]+)\$') FROM pg_class WHERE relname LIKE '${queue}\\_%' LIMIT 1") .
	" (model, change) VALUES ('dist_lsq', -1)", extra_params => ['-U', 'mallory']);
like($err, qr/permission denied/, 'a role cannot write a queue shard on a worker');
($rc, $out, $err) = $coordinator->psql('postgres', "CREATE TRIGGER unlearn_shard_x AFTER DELETE ON mine
FOR EACH ROW EXECUTE FUNCTION unlearn._shard_queue('dist_lsq', 'public.dist', '$queue', 'squared', 'skip', '64', '65', 'array', 'y', 'pixels')",
	extra_params => ['-U', 'mallory']);
like($err, qr/permission denied for function unlearn._shard_queue/, 'nor attach the shard trigger to a table');
my $tgname = $coordinator->safe_psql('postgres',
	q{SELECT tgname FROM pg_trigger WHERE tgrelid = 'dist'::regclass AND tgname LIKE 'unlearn\_shard\_%' LIMIT 1});
for my $ddl ("DROP TRIGGER $tgname ON dist", "ALTER TABLE dist DISABLE TRIGGER $tgname")
{
	($rc, $out, $err) = $coordinator->psql('postgres', "SET citus.enable_unsafe_triggers = on; $ddl");
	like($err, qr/the unlearn triggers of table "dist" must stay enabled/, "refused: $ddl");
}

# only the table's owner trains on it, and no other role adds a trigger to
# it; a grantee's erasure and unlearn_wait in one transaction: the wait
# says false, the erasure commits
$coordinator->safe_psql('postgres', 'GRANT SELECT, DELETE, TRIGGER ON dist TO mallory; CREATE SCHEMA mallory_s AUTHORIZATION mallory');
($rc, $out, $err) = $coordinator->psql('postgres',
	q{SELECT unlearn_train('m_mallory', 'dist', 'five', '{pixels}', options => '{"removal": "async"}')},
	extra_params => ['-U', 'mallory']);
like($err, qr/only the owner of distributed table "dist" can train a model on it/, 'a grantee does not train on the table');
($rc, $out, $err) = $coordinator->psql('postgres', q{CREATE FUNCTION mallory_s.f() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN OLD; END$$;
SET citus.enable_unsafe_triggers = on;
CREATE TRIGGER mallory_t BEFORE DELETE ON dist FOR EACH ROW EXECUTE FUNCTION mallory_s.f()},
	extra_params => ['-U', 'mallory']);
like($err, qr/only a superuser can add a trigger to "dist", which has unlearn models/, 'nor adds a trigger to it');
$coordinator->safe_psql('postgres', q{SELECT unlearn_grant('dist_lsq', 'mallory')});
($rc, $out, $err) = $coordinator->psql('postgres',
	q{BEGIN; DELETE FROM dist WHERE id % 89 = 7; SELECT unlearn_wait('dist_lsq', 1); COMMIT;},
	extra_params => ['-U', 'mallory']);
is($out, 'f', 'unlearn_wait after an erasure in its transaction says false');
like($err, qr/the queue of model "dist_lsq" cannot be read in a transaction that wrote its distributed table/, 'with a notice');
is($coordinator->safe_psql('postgres', 'SELECT count(*) FROM dist WHERE id % 89 = 7'), '0', 'and the erasure commits');
$coordinator->safe_psql('postgres', "SELECT unlearn_apply_pending('dist_lsq')");
is(in_step('dist_lsq'), 't', 'then reaches the model');
($rc, $out, $err) = $workers[0]->psql('postgres', "SET citus.enable_manual_changes_to_shards = on;
SELECT unlearn_train('m_shard', '$shard', 'five', '{pixels}')");
like($err, qr/cannot train a model on "$shard", a shard of a distributed table/, 'a worker refuses to train on a shard');

# a worker has no model catalog: there, a shard's trigger and the columns it
# names stay as they are unless a superuser changes them (mallory is given
# a shard directly on its worker)
my $owned = $workers[0]->safe_psql('postgres', q{
SET citus.override_table_visibility = off;
SELECT relname FROM pg_class WHERE relname ~ '^dist_[0-9]+$' AND substring(relname from '[0-9]+$')::bigint IN (SELECT shardid FROM pg_dist_shard WHERE logicalrelid = 'dist'::regclass) ORDER BY relname LIMIT 1});
$workers[0]->safe_psql('postgres', "SET citus.enable_ddl_propagation = off; ALTER TABLE $owned OWNER TO mallory");
my $shard_trigger = $workers[0]->safe_psql('postgres', "SELECT tgname FROM pg_trigger
WHERE tgrelid = '$owned'::regclass AND tgname LIKE 'unlearn\\_shard\\_%' LIMIT 1");
for my $ddl ("ALTER TABLE $owned DISABLE TRIGGER $shard_trigger", "ALTER TABLE $owned ENABLE REPLICA TRIGGER $shard_trigger",
	"ALTER TABLE $owned DISABLE TRIGGER ALL", "ALTER TRIGGER $shard_trigger ON $owned RENAME TO other",
	"DROP TRIGGER $shard_trigger ON $owned", "ALTER TABLE $owned RENAME COLUMN y TO z")
{
	($rc, $out, $err) = $workers[0]->psql('postgres', $ddl, extra_params => ['-U', 'mallory']);
	like($err, qr/the unlearn shard triggers of "$owned" must stay as they are/, "refused on a worker: $ddl");
}
$workers[0]->safe_psql('postgres', "SET citus.enable_ddl_propagation = off; ALTER TABLE $owned OWNER TO postgres");

# 8. what would hide rows from the models, or lose the queue, is refused
for my $ddl ('TRUNCATE dist', 'ALTER TABLE dist RENAME TO dist2',
	'CREATE SCHEMA elsewhere; ALTER TABLE dist SET SCHEMA elsewhere', 'ALTER SCHEMA public RENAME TO pub',
	'ALTER TABLE dist OWNER TO mallory')
{
	($rc, $out, $err) = $coordinator->psql('postgres', $ddl);
	like($err, qr/cannot (truncate|rename|move|rename the schema of|change the owner of) distributed table "dist" because unlearn models are trained on it/,
		"refused: $ddl");
}

# 9. the last model takes the queue with it, and so does the table's drop
$coordinator->safe_psql('postgres', "SELECT unlearn_drop(model) FROM unlearn.models WHERE source = 'dist'::regclass");
is($coordinator->safe_psql('postgres', qq{
SELECT (SELECT count(*) FROM pg_trigger WHERE tgrelid = 'dist'::regclass AND tgname LIKE 'unlearn\\_shard\\_%')
	 + (SELECT count(*) FROM pg_class WHERE relname = '$queue')}),
	'0', 'dropping the models drops their triggers and the queue');
# a table name that Citus shortens in its shards' names, and one that a
# dropped table's name would hash alike if names were not quoted
$coordinator->safe_psql('postgres', q{
CREATE SCHEMA "odd.s"; CREATE SCHEMA odd;
CREATE TABLE "odd.s".t (id int PRIMARY KEY, five boolean, pixels float8[]);
CREATE TABLE long_name_long_name_long_name_long_name_long_name_long_name_lon (id int PRIMARY KEY, five boolean, pixels float8[]);
SELECT create_distributed_table(t, 'id', shard_count => 4)
FROM unnest('{"\"odd.s\".t",long_name_long_name_long_name_long_name_long_name_long_name_lon}'::text[]) t;
INSERT INTO "odd.s".t SELECT id, five, pixels FROM single;
INSERT INTO long_name_long_name_long_name_long_name_long_name_long_name_lon SELECT id, five, pixels FROM single;
SELECT count(*) FROM unlearn_train('m_odd', '"odd.s".t', 'five', '{pixels}', options => '{"removal": "async"}');
SELECT count(*) FROM unlearn_train('m_long', 'long_name_long_name_long_name_long_name_long_name_long_name_lon', 'five', '{pixels}', options => '{"removal": "async"}');
DELETE FROM "odd.s".t WHERE id % 5 = 0;
DELETE FROM long_name_long_name_long_name_long_name_long_name_long_name_lon WHERE id % 5 = 0;
CREATE TABLE odd."s.t" (a int); DROP TABLE odd."s.t";
SELECT unlearn_apply_pending(m) FROM unnest('{m_odd,m_long}'::text[]) m;
});
is($coordinator->safe_psql('postgres', q{
SELECT string_agg(m.model || ':' || (m.rows = (SELECT count(*) FROM single WHERE id % 5 <> 0) AND v.certified), ',' ORDER BY m.model)
FROM unlearn.models m, unlearn_verify(m.model) v WHERE m.model IN ('m_odd', 'm_long')}),
	'm_long:true,m_odd:true', 'a long table name and a quoted one keep their queues');
$coordinator->safe_psql('postgres', q{
DROP TABLE "odd.s".t, long_name_long_name_long_name_long_name_long_name_long_name_lon;
});
$coordinator->safe_psql('postgres', q{
CREATE TABLE gone (id int PRIMARY KEY, five boolean, pixels float8[]);
SELECT create_distributed_table('gone', 'id', shard_count => 4);
INSERT INTO gone SELECT id, five, pixels FROM single;
SELECT count(*) FROM unlearn_train('gone', 'gone', 'five', '{pixels}', options => '{"removal": "async"}');
});
is($coordinator->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname LIKE 'citus\_queue\_%'}),
	'1', 'a second table has its queue');
$coordinator->safe_psql('postgres', 'DROP TABLE gone');
is($coordinator->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM pg_class WHERE relname LIKE 'citus\_queue\_%') + (SELECT count(*) FROM unlearn.models WHERE model = 'gone')}),
	'0', 'dropping the table drops its models and its queue');
$coordinator->safe_psql('postgres', "SELECT unlearn_drop(model) FROM unlearn.models");

# 10. a trained local table stays local
$coordinator->safe_psql('postgres', q{
CREATE TABLE kept AS SELECT * FROM single;
SELECT count(*) FROM unlearn_train('kept', 'kept', 'five', '{pixels}', sigma => 1);
});
($rc, $out, $err) = $coordinator->psql('postgres', q{SELECT create_distributed_table('kept', 'id')});
like($err, qr/because it has triggers/, 'Citus refuses to distribute the trained table');
($rc, $out, $err) = $coordinator->psql('postgres',
	q{SET citus.enable_unsafe_triggers = on; SELECT create_distributed_table('kept', 'id')});
isnt($rc, 0, 'with citus.enable_unsafe_triggers too');
($rc, $out, $err) = $coordinator->psql('postgres', q{SELECT citus_add_local_table_to_metadata('kept')});
isnt($rc, 0, 'and it is not added to the metadata');
is($coordinator->safe_psql('postgres', q{SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = 'kept'::regclass}),
	'0', 'the table is still local');
$coordinator->safe_psql('postgres', 'DELETE FROM kept WHERE id % 9 = 0');
is($coordinator->safe_psql('postgres', q{
SELECT m.rows = (SELECT count(*) FROM kept) AND v.certified
FROM unlearn.models m, unlearn_verify(m.model) v WHERE m.model = 'kept'}),
	't', 'its model follows a DELETE, certified');

$_->stop for ($coordinator, @workers);
done_testing();
