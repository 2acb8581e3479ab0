-- unlearn.progress read from inside a training: a table owner's code that
-- runs while the training plans its passes (an immutable function in a
-- partial index predicate) sees the training's line.  Work on another
-- role's model nested in the training reports nothing into it, and a
-- long model name is clipped on a character boundary.
CREATE ROLE prog_victim;
CREATE ROLE prog_probe;
GRANT CREATE ON SCHEMA public TO prog_victim, prog_probe;

SET ROLE prog_victim;
CREATE TABLE prog_secret AS
	SELECT g AS id, g % 2 AS y, ARRAY[sin(g), cos(g * 1.7), sin(g * 0.3) * 2 + g % 2]::float8[] AS x
	FROM generate_series(1, 3000) g;
ALTER TABLE prog_secret ADD PRIMARY KEY (id);
SELECT model, rows FROM unlearn_train('prog_secret_model', 'prog_secret', 'y', '{x}', lambda => 1e-2, sigma => 5);
GRANT INSERT ON prog_secret TO prog_probe;
RESET ROLE;

SET ROLE prog_probe;
CREATE TEMP TABLE prog_fired (fired int);
CREATE TABLE prog_mine AS
	SELECT g AS id, g % 3 = 0 AS y, ARRAY[sin(g), cos(g * 1.7), sin(g * 0.3) * 2]::float8[] AS x
	FROM generate_series(1, 300) g;
-- once armed: show this backend's line, insert a row with a new label into
-- the victim's table (its model retrains here, nested in the training),
-- and show the line again
CREATE FUNCTION prog_look() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	line text;
BEGIN
	-- once per arming: a training restores the settings it pins, so the
	-- disarming is kept in a table
	IF coalesce(current_setting('prog_probe.armed', true), '') <> 'on' OR
	   EXISTS (SELECT FROM pg_temp.prog_fired) THEN
		RETURN true;
	END IF;
	INSERT INTO pg_temp.prog_fired VALUES (1);
	PERFORM set_config('prog_probe.armed', 'off', false);
	SELECT format('model %s, phase %s, pass %s, rows_total %s, iteration %s, gradient_norm %s',
				  model, phase, pass, coalesce(rows_total::text, 'null'),
				  coalesce(iteration::text, 'null'), coalesce(gradient_norm::text, 'null'))
		INTO line FROM unlearn.progress WHERE pid = pg_catalog.pg_backend_pid();
	RAISE NOTICE 'before: %', line;
	IF current_setting('prog_probe.insert') = 'on' THEN
		INSERT INTO public.prog_secret VALUES (100000, 7, ARRAY[1, 2, 3]::float8[]);
	END IF;
	SELECT format('model %s, phase %s, pass %s, rows_total %s, iteration %s, gradient_norm %s',
				  model, phase, pass, coalesce(rows_total::text, 'null'),
				  coalesce(iteration::text, 'null'), coalesce(gradient_norm::text, 'null'))
		INTO line FROM unlearn.progress WHERE pid = pg_catalog.pg_backend_pid();
	RAISE NOTICE 'after: %', line;
	RETURN true;
END $$;
CREATE FUNCTION prog_hook(int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	RETURN public.prog_look();
END $$;
CREATE INDEX ON prog_mine (id) WHERE public.prog_hook(1);
SET prog_probe.insert = on;
SET prog_probe.armed = on;
SELECT model, rows FROM unlearn_train('prog_mine_model', 'prog_mine', 'y', '{x}', lambda => 1e-2, sigma => 5);
RESET ROLE;
-- the nested retrain did happen, with the new class
SELECT model, rows, array_length(classes, 1) AS classes FROM unlearn.models WHERE model = 'prog_secret_model';

-- a name longer than a slot holds is cut between characters
SET ROLE prog_probe;
SET prog_probe.insert = off;
DELETE FROM prog_fired;
SET prog_probe.armed = on;
SELECT rows FROM unlearn_train(repeat('é', 40), 'prog_mine', 'y', '{x}', lambda => 1e-2, sigma => 5);
RESET ROLE;

SELECT unlearn_drop(model) FROM unlearn.models WHERE owner::text IN ('prog_victim', 'prog_probe') ORDER BY model;
DROP TABLE prog_secret, prog_mine, prog_fired;
DROP FUNCTION prog_hook(int);
DROP FUNCTION prog_look();
REVOKE CREATE ON SCHEMA public FROM prog_victim, prog_probe;
DROP ROLE prog_victim, prog_probe;
