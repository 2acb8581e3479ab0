# pg_dump and pg_restore (plain and custom format) into a fresh database
# give models that keep forgetting: the event triggers accept the
# restore's DDL, the restored tables have their triggers, the ledger's
# sequence goes on, and the first DELETE rebuilds the matrices (which are
# in no dump) and stays certified.  A non-superuser owner dumps their own
# database with --enable-row-security and gets their own models, each with
# its state, grants and ledger; the restore, which writes the unlearn
# catalog, is a superuser's.  A role granted a model reads it after the
# restore.  A Noisy-GD model, which is its catalog row only, comes back
# with its weights, parameters and accounting.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use UnlearnNode;
use Test::More;

my $node = unlearn_node('dump');
$node->start;
my $tmp = PostgreSQL::Test::Utils::tempdir;

$node->safe_psql('postgres', q{
CREATE ROLE alice LOGIN;
CREATE ROLE bob;
CREATE DATABASE shop OWNER alice;
});
$node->safe_psql('shop', 'CREATE EXTENSION unlearn');
$node->safe_psql('shop', q{
SET ROLE alice;
} . $DIGITS_SQL . q{
CREATE TABLE ones (id int PRIMARY KEY, one boolean, pixels float8[]) PARTITION BY RANGE (id);
CREATE TABLE ones_low PARTITION OF ones FOR VALUES FROM (MINVALUE) TO (900);
CREATE TABLE ones_high PARTITION OF ones FOR VALUES FROM (900) TO (MAXVALUE);
INSERT INTO ones SELECT id, label = 1, pixels FROM digits WHERE label IN (1, 7);
SELECT model FROM unlearn_train('alice_ones', 'ones', 'one', '{pixels}', sigma => 5);
SELECT model FROM unlearn_train('alice_digits', 'digits', 'label', '{pixels}', sigma => 5);
DELETE FROM ones WHERE id IN (SELECT id FROM ones ORDER BY id LIMIT 3);
SELECT unlearn_grant('alice_ones', 'bob');
RESET ROLE;
-- a superuser's model on alice's table: not in alice's dump
SELECT model FROM unlearn_train('admin_ones', 'ones', 'one', '{pixels}', sigma => 10);
SELECT unlearn_grant('admin_ones', 'bob', 'monitor');
});
my $grants_sql = "SELECT string_agg(model || ':' || grantee || ':' || privilege, ',' ORDER BY model) FROM unlearn.model_grants";
my $models_sql = "SELECT string_agg(model || ':' || md5(coef::text) || ':' || rows || ':' || removed, ',' ORDER BY model) FROM unlearn.models";

sub check_restore
{
	my ($label, $db, $expect_models) = @_;
	my $models = $node->safe_psql($db, "SELECT string_agg(model, ',' ORDER BY model) FROM unlearn.models");
	is($models, $expect_models, "$label: the models");
	my $expected = $node->safe_psql('shop',
		"$models_sql WHERE model = ANY (string_to_array('$expect_models', ','))");
	is($node->safe_psql($db, $models_sql), $expected, "$label: weights, rows and counts as dumped");
	is($node->safe_psql($db, $grants_sql),
		$node->safe_psql('shop', "$grants_sql WHERE model = ANY (string_to_array('$expect_models', ','))"),
		"$label: the grants of the models");
	is($node->safe_psql($db, q{SET ROLE bob; SELECT unlearn_coef('alice_ones') IS NOT NULL}), 't',
		"$label: a grantee reads the restored model");
	is($node->safe_psql($db, q{
		SELECT count(*) FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid
		WHERE c.relname IN ('ones', 'ones_low', 'ones_high', 'digits') AND g.tgname LIKE 'unlearn\_%'
		AND g.tgenabled = 'A'}), '20', "$label: every table has its five triggers, enabled always");
	is($node->safe_psql($db, "SELECT bool_or(resident) FROM unlearn.status"), 'f',
		"$label: no matrices are resident after a restore");

	$node->safe_psql($db, 'DELETE FROM ones WHERE id IN (SELECT id FROM ones ORDER BY id LIMIT 2)');
	$node->safe_psql($db, 'DELETE FROM digits WHERE id = (SELECT max(id) FROM digits)');
	is($node->safe_psql($db, q{
		SELECT bool_and(m.rows = (SELECT count(*) FROM ones)) FROM unlearn.models m WHERE m.source = 'ones'::regclass}),
		't', "$label: a DELETE reaches the models");
	is($node->safe_psql($db, q{
		SELECT bool_and(certified) FROM unlearn.models m, unlearn_verify(m.model)}), 't',
		"$label: certified after the DELETE");
	is($node->safe_psql($db, q{
		SELECT count(*) FILTER (WHERE operation = 'rebuild') = count(DISTINCT model)
		FROM unlearn.ledger WHERE xact = (SELECT max(xact) FROM unlearn.ledger) OR operation = 'rebuild'}),
		't', "$label: each model rebuilt its matrices once");
	is($node->safe_psql($db, "SELECT sum(retrains) FROM unlearn.models"),
		$node->safe_psql('shop', "SELECT sum(retrains) FROM unlearn.models WHERE model = ANY (string_to_array('$expect_models', ','))"),
		"$label: nothing retrained");
	# the ledger's sequence was restored: training writes new ledger rows
	$node->safe_psql($db, "SELECT model FROM unlearn_train('new_model', 'digits', 'label', '{pixels}', sigma => 5)");
	is($node->safe_psql($db, "SELECT count(*) FROM unlearn.ledger WHERE model = 'new_model'"), '1',
		"$label: a new training after the restore");
}

my $n = 0;
foreach my $case (['superuser, plain', 'postgres', 'p', []],
	['superuser, custom', 'postgres', 'c', []],
	['alice, plain', 'alice', 'p', ['--enable-row-security']],
	['alice, custom', 'alice', 'c', ['--enable-row-security']])
{
	my ($label, $user, $format, $extra) = @$case;
	my $file = "$tmp/dump" . (++$n);
	my $db = "restored$n";
	$node->command_ok(['pg_dump', '-U', $user, '-F', $format, @$extra, '-f', $file, '-d', $node->connstr('shop')],
		"$label: pg_dump");
	$node->safe_psql('postgres', "CREATE DATABASE $db OWNER alice");
	my ($stdout, $stderr);
	if ($format eq 'p')
	{
		IPC::Run::run(['psql', '-X', '-v', 'ON_ERROR_STOP=1', '-q', '-d', $node->connstr($db), '-f', $file],
			'>', \$stdout, '2>', \$stderr);
	}
	else
	{
		IPC::Run::run(['pg_restore', '--exit-on-error', '-d', $node->connstr($db), $file],
			'>', \$stdout, '2>', \$stderr);
	}
	is($?, 0, "$label: restore succeeds");
	unlike($stderr // '', qr/ERROR/, "$label: without errors");
	check_restore($label, $db,
		$user eq 'postgres' ? 'admin_ones,alice_digits,alice_ones' : 'alice_digits,alice_ones');
}

# a Noisy-GD model is its catalog row only: restored, it keeps its weights,
# parameters and accounting, and its first DELETE runs its steps
$node->safe_psql('postgres', 'CREATE DATABASE gd');
$node->safe_psql('gd', 'CREATE EXTENSION unlearn');
$node->safe_psql('gd', $DIGITS_SQL . q{
CREATE TABLE t AS SELECT id, label = 8 AS eight, pixels FROM digits WHERE label IN (3, 8);
ALTER TABLE t ADD PRIMARY KEY (id);
SELECT model FROM unlearn_train('gd', 't', 'eight', '{pixels}', lambda => 0.01, mechanism => 'noisy_gd');
DELETE FROM t WHERE id = (SELECT min(id) FROM t);
});
my $gd_sql = "SELECT md5(coef::text) || ':' || rows || ':' || sigma || ':' || step_size || ':' || training_steps "
	. "|| ':' || gd_steps || ':' || fewest_rows || ':' || spent || ':' || mechanism FROM unlearn.models";
$node->command_ok(['pg_dump', '-F', 'c', '-f', "$tmp/gd.dump", '-d', $node->connstr('gd')], 'noisy_gd: pg_dump');
$node->safe_psql('postgres', 'CREATE DATABASE gd_restored');
$node->command_ok(['pg_restore', '--exit-on-error', '-d', $node->connstr('gd_restored'), "$tmp/gd.dump"],
	'noisy_gd: pg_restore');
is($node->safe_psql('gd_restored', $gd_sql), $node->safe_psql('gd', $gd_sql),
	'noisy_gd: weights, parameters and accounting as dumped');
is($node->safe_psql('gd_restored', q{
DELETE FROM t WHERE id IN (SELECT id FROM t ORDER BY id LIMIT 3);
SELECT rows = (SELECT count(*) FROM t) AND spent <= budget FROM unlearn.models}), 't',
	'noisy_gd: the restored model follows a DELETE');

$node->stop;
done_testing();
