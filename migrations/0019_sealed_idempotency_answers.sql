-- Idempotent answers are now stored sealed (AES-256-GCM under a key derived from the caller's
-- credential and the Idempotency-Key, neither of which is stored). Answers recorded before were
-- plain JSON and could hold a secret shown once (a share link's token, a webhook's secret):
-- they are deleted (a retry of one of those requests within its 24 hours runs as a new request).
DELETE FROM "idempotency_keys" WHERE "response" IS NOT NULL AND NOT ("response" ? 'sealed');
