-- A findings store written by numfuzz at 9a5c8c0 (schema version 1), dumped with sqlite3 iterdump.
BEGIN TRANSACTION;
CREATE TABLE causes (
    signature TEXT PRIMARY KEY REFERENCES findings(signature),
    fields    TEXT NOT NULL
);
INSERT INTO "causes" VALUES('0123456789abcdef','{"backend": "inductor", "core": ["mul_scalar"], "device": "cpu", "family": "flip", "vanishes_with": []}');
CREATE TABLE findings (
    signature    TEXT PRIMARY KEY,
    kind         TEXT NOT NULL,
    device       TEXT NOT NULL,
    dtype        TEXT NOT NULL,
    op_chain     TEXT NOT NULL,
    output       TEXT NOT NULL DEFAULT '',
    title        TEXT NOT NULL DEFAULT '',
    summary      TEXT NOT NULL DEFAULT '',
    distance_ulps REAL,
    first_seen   TEXT NOT NULL,
    last_seen    TEXT NOT NULL,
    hits         INTEGER NOT NULL DEFAULT 1,
    reliability_ok INTEGER,
    reliability_k  INTEGER,
    status       TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'fixed', 'flaky')),
    fixed_in     TEXT,
    checked_at   TEXT,
    case_path    TEXT,
    repro_path   TEXT,
    draft_path   TEXT,
    attribution  TEXT NOT NULL DEFAULT '{}'
);
INSERT INTO "findings" VALUES('0123456789abcdef','int-flip','cpu','float32','input mul_scalar(%0) e8m0(%1)->out0','','[numfuzz] int-flip in output 0 (uint8): mul_scalar → e8m0 (cpu, float32)','',NULL,'2030-01-01T01:00:00Z','2030-01-01T01:00:00Z',1,3,3,'open',NULL,NULL,'reports/findings/0123456789abcdef/case.pt',NULL,NULL,'{}');
CREATE TABLE known_hits (
    entry TEXT NOT NULL,
    night TEXT NOT NULL,
    key   TEXT NOT NULL,
    at    TEXT NOT NULL,
    PRIMARY KEY (entry, night, key)
);
INSERT INTO "known_hits" VALUES('fused-low-precision-roundtrip','2030-01-01#1','int-flip-0002.pt','2026-11-25T07:55:02Z');
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO "meta" VALUES('schema_version','1');
CREATE TABLE processed (
    night     TEXT NOT NULL,
    key       TEXT NOT NULL,
    signature TEXT,
    outcome   TEXT NOT NULL,
    at        TEXT NOT NULL,
    PRIMARY KEY (night, key)
);
INSERT INTO "processed" VALUES('2030-01-01#1','int-flip-0001.pt','0123456789abcdef','new','2030-01-01T01:00:00Z');
INSERT INTO "processed" VALUES('2030-01-01#1','int-flip-0002.pt',NULL,'known: fused-low-precision-roundtrip','2026-11-25T07:55:02Z');
CREATE TABLE sightings (
    signature TEXT NOT NULL,
    head      TEXT NOT NULL,
    graph     TEXT NOT NULL,
    first_seen TEXT NOT NULL,
    PRIMARY KEY (signature, head, graph)
);
INSERT INTO "sightings" VALUES('0123456789abcdef','e8m0','mul_scalar → e8m0','2030-01-01T01:00:00Z');
CREATE TABLE versions_seen (
    signature TEXT NOT NULL REFERENCES findings(signature),
    torch     TEXT NOT NULL,
    triton    TEXT NOT NULL,
    first_seen TEXT NOT NULL,
    PRIMARY KEY (signature, torch, triton)
);
INSERT INTO "versions_seen" VALUES('0123456789abcdef','2.13.0+cpu','none','2030-01-01T01:00:00Z');
CREATE INDEX processed_key ON processed (key);
COMMIT;
