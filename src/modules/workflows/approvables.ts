// The approvable registry: how a module (DCR, calculation grids, rebate record groups, ...) plugs
// its documents into the one workflow engine. A module calls `registerApprovable` once, when its
// routes are registered, and submits documents with `submitApprovable` (./service.ts) from its own
// submit operation, inside its own transaction; `/workflowsmanager.submit/{typedId}` does the same
// for any registered type. The engine then calls the module back in the same transaction:
//
//   registerApprovable({
//     typeCode: 'DCR',                      // the document's type code (workflow `code`)
//     label: 'Data change request',
//     submitAccess: 'DCR_SUBMIT',           // permission of /workflowsmanager.submit for this type
//     fields: ['label', 'totalDiscount'],   // optional: names conditions may use (checked on WFD write)
//     async describe(q, ref) {              // the document as conditions see it, locked FOR UPDATE;
//       ...                                 // null when no such document in ref.partitionId (→ 404)
//       return { label, workflowStatus, fields: { label, totalDiscount } };
//     },
//     async onStatus(q, ref, status) {      // SUBMITTED, then APPROVED | DENIED | WITHDRAWN:
//       ...                                 // set your workflowStatus; on APPROVED apply the change.
//     },                                    // Throwing rolls the whole request back.
//   });
//
// `ref` = { partitionId, id, userId (who acted), workflowId }. Every query of a callback must be
// scoped by `ref.partitionId`. The registry is code configuration (filled at start-up), not request
// state. Registering a type code again replaces the earlier entry (tests build several apps).

import type { RouteAccess } from '../../access/catalogue.ts';
import type { Queryable } from '../../db/db.ts';

/** The statuses an approvable goes through; DRAFT is the document's own state before a submit. */
export type WorkflowStatus = 'SUBMITTED' | 'APPROVED' | 'DENIED' | 'WITHDRAWN';

export interface ApprovableRef {
  readonly partitionId: number;
  /** The document's id in its own type. */
  readonly id: number;
  /** The user who acted (submitter, last approver, denier, withdrawer). */
  readonly userId: number;
  readonly workflowId: number;
}

export interface ApprovableRecord {
  /** Shown in workflow lists (e.g. the DCR label). */
  readonly label?: string | null;
  /** The document's current workflow status; APPROVED documents cannot be submitted again. */
  readonly workflowStatus?: string | null;
  /** The values definition and step conditions are evaluated on. */
  readonly fields: Readonly<Record<string, unknown>>;
}

export interface Approvable {
  readonly typeCode: string;
  readonly label: string;
  readonly submitAccess: RouteAccess;
  readonly fields?: readonly string[];
  describe(q: Queryable, ref: Omit<ApprovableRef, 'workflowId'>): Promise<ApprovableRecord | null>;
  onStatus(q: Queryable, ref: ApprovableRef, status: WorkflowStatus): Promise<void>;
}

const TYPE_CODE = /^[A-Z][A-Z0-9]{0,39}$/;
const approvables = new Map<string, Approvable>();

export function registerApprovable(a: Approvable): void {
  if (!TYPE_CODE.test(a.typeCode)) throw new Error(`bad approvable type code ${a.typeCode}`);
  approvables.set(a.typeCode, a);
}

export function findApprovable(typeCode: string): Approvable | undefined {
  return approvables.get(typeCode);
}

export function approvableCodes(): string[] {
  return [...approvables.keys()].sort();
}
