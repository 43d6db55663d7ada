// The function set of pricing logics: the pure built-ins plus those that read data.

import { CRITERIA } from './criteria.ts';
import { DATA } from './data.ts';
import { logicFunctions } from './index.ts';
import type { FnDef } from './types.ts';

// conditionRecord() joins when the condition-record look-up (contracts.md #1) is on main.
export const LOGIC_FUNCTIONS: ReadonlyMap<string, FnDef> = logicFunctions([
  DATA.filter((f) => f.name !== 'conditionRecord'),
  CRITERIA,
]);
