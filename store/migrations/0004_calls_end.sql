-- Usage analytics reads the calls whose answered time crosses the start of
-- the requested range: invited before it, ended after it. This index finds
-- them without reading the rows of the calls that ended earlier.
CREATE INDEX calls_team_end ON calls(team_id, end_us, invite_us);
