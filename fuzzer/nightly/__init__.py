"""Stage 11, the nightly: what cron runs, in its parts. The job, its stages in order and their
shared deadline (``job``); a night's persisted state, its settings and plan of arms, and what the
stages share (``night``); the night's workers as lanes that fuzz or process as the backlog asks
(``lanes``); raw findings waiting, in buckets, served in value order, parked after two failures
(``backlog``); a raw case's fingerprint and a member's cheap check against its bucket's cause
(``buckets``); a representative minimized, triaged and recorded, a member checked
(``pipeline``); a draft for each new root cause (``drafts``); open causes replayed on this torch
(``recheck``); SUMMARY.md (``summary``). May import every earlier stage.
"""
