// Import types (src/modules/imports/): imports (IM: read with /fetch/IM, created and changed only by
// /importmanager.*) and their staged changes (IMC: served by /importmanager.fetch, .save,
// .massedit and .massdelete with the engine's filter, paging and mass edit).

import type { FieldDef, FieldType, TypeDef } from './types.ts';
import { SYSTEM, text } from './registry-fields.ts';

const sys = (name: string, column: string, type: FieldType = 'string'): FieldDef => ({
  name,
  column,
  type,
  system: true,
});

export const IMPORT_KEY_COUNT = 6;
export const VALIDATION_STATES = ['NEW', 'VALID', 'INVALID'] as const;

export const IMPORT_TYPES: readonly TypeDef[] = [
  {
    code: 'IM',
    label: 'Import',
    table: 'imports',
    fields: [
      sys('uniqueName', 'unique_name'),
      sys('label', 'label'),
      sys('targetType', 'target_type'),
      sys('lookupTable', 'lookup_table'),
      sys('fileName', 'file_name'),
      sys('status', 'status'),
      sys('applyDate', 'applied_at', 'datetime'),
      sys('messages', 'messages', 'json'),
      ...SYSTEM,
    ],
    businessKey: ['uniqueName'],
    uniqueColumns: ['unique_name'],
    deleteMode: 'hard',
    massEditable: false,
    bulkLoadable: false,
    userGroups: false,
    // /delete/IM removes an import with its staged changes.
    access: { fetch: 'IMPORT_EDIT', write: 'IMPORT_EDIT' },
    writtenBy: { message: 'imports are created and changed with /importmanager.*', deletable: true },
    noHistory: 'imports keep no record history',
  },
  {
    code: 'IMC',
    label: 'Import change',
    table: 'import_changes',
    fields: [
      sys('importId', 'import_id', 'integer'),
      text('changeType', 'change_type', { oneOf: ['ADD', 'UPDATE', 'DELETE'], maxLength: 10 }),
      text('targetColumn', 'target_column', { maxLength: 100 }),
      ...Array.from({ length: IMPORT_KEY_COUNT }, (_, i) =>
        text(`key${i + 1}`, `key${i + 1}`, { maxLength: 255 }),
      ),
      text('value', 'value', { maxLength: 100_000 }),
      // Set by the service (validation at submit; NEW again after a change), never by clients.
      text('validationState', 'validation_state', { oneOf: VALIDATION_STATES, maxLength: 10 }),
      text('message', 'message', { maxLength: 10_000 }),
      sys('rowNumber', 'row_number', 'integer'),
      ...SYSTEM,
    ],
    businessKey: [],
    uniqueColumns: [],
    deleteMode: 'hard',
    massEditable: true,
    bulkLoadable: false,
    userGroups: false,
    access: { fetch: 'IMPORT_EDIT', write: 'IMPORT_EDIT' },
    managerOnly: '/importmanager.* (the staged changes of imports)',
    noHistory: 'imports keep no record history',
  },
];
