/**
 * Declared schemas: the columns a normalizer preset promises, whatever tonight's data holds. A sink given a declared
 * schema creates every declared column from the first run, with the declared type, so downstream queries never
 * depend on which optional fields some record happened to fill. Columns the data adds beyond the declaration are
 * inferred as usual (and governed by the schema contract).
 */
import { structOf, type LogicalType, type StructType } from './logical-type.js';

export interface DeclaredColumn {
  name: string;
  type: LogicalType;
  /** false: every row has a value (the preset always computes one); true: null when the input does not say. */
  nullable: boolean;
  /** One line for the README's column tables and `sluice schema`. */
  description: string;
}

/** Columns in the order the tables get them. */
export type DeclaredSchema = readonly DeclaredColumn[];

/** Column name → declared type, in declaration order. */
export function declaredTypes(schema: DeclaredSchema): Map<string, LogicalType> {
  return new Map(schema.map((c) => [c.name, c.type]));
}

/** A declared column; `nullable` defaults to true (most fields are optional in the service's payloads). */
export function column(name: string, type: LogicalType, description: string, nullable = true): DeclaredColumn {
  return { name, type, nullable, description };
}

/** A STRUCT type from a field table, in the order given. */
export function struct(fields: Record<string, LogicalType>): StructType {
  return structOf(Object.entries(fields));
}
