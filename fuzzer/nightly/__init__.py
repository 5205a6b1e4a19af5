"""Stage 11, the nightly: what cron runs, in its parts. The job, its stages in order and their
shared deadline (``job``); a night's persisted state, its settings and plan of arms, and what the
stages share (``night``); each new case file minimized, triaged and recorded (``pipeline``); a
draft for each new root cause (``drafts``); open causes replayed on this torch (``recheck``);
SUMMARY.md (``summary``). May import every earlier stage.
"""
