-- A search's probes are experiments of one run each: search_id names the search (GET /v1/searches/{id}) on the
-- experiment and its run, so their pages can show the search they belong to.
ALTER TABLE experiments ADD COLUMN search_id INTEGER REFERENCES searches(id);
