-- A tenant's own fusion constants (RRF k, keyword leg weight, candidate depth),
-- chosen out of fold by its eval and adopted only when they beat the defaults
-- there; NULL: the defaults.
-- depends: 0016_publication_grace
ALTER TABLE tenants ADD COLUMN fusion jsonb;
