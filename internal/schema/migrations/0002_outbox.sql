-- placeholder: replaced by the outbox migration
SELECT 1;
