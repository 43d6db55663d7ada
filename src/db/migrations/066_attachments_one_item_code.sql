-- Attachments of condition record items are kept under `CRCI`, whichever code addressed the item
-- (`CRCI2` and `CRCI` typedIds name one item): files attached through a sized code before are moved
-- to the item's one list (src/modules/files/attachment-owner.ts, `Owner.code`).
UPDATE attachments SET owner_type = 'CRCI' WHERE owner_type ~ '^CRCI[0-9]+$';
