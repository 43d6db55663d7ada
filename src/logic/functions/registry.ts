// The function set of pricing logics: the pure built-ins plus those that read data.

import { CRITERIA } from './criteria.ts';
import { DATA } from './data.ts';
import { logicFunctions } from './index.ts';
import type { FnDef } from './types.ts';

export const LOGIC_FUNCTIONS: ReadonlyMap<string, FnDef> = logicFunctions([DATA, CRITERIA]);
