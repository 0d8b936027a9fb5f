-- placeholder: replaced by the event log migration
SELECT 1;
