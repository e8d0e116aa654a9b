/**
 * How a dataset describes its fields: the metadata endpoint's `{type, active, required, description}` per field,
 * plus what the filter needs to apply the service's type rules (`<` on numbers and dates, `array_includes` on
 * arrays, `field:value` / `field:subfield` on nested values).
 */

/** Types of scalar values. `date` fields hold ISO 8601 strings. */
export type ScalarType = 'text' | 'url' | 'number' | 'date' | 'boolean';

export type FieldSpec =
  | { type: ScalarType; description: string; required?: boolean }
  /** An array of scalars (`items`) or of objects (`fields`). */
  | {
      type: 'array';
      description: string;
      required?: boolean;
      items?: ScalarType;
      fields?: Record<string, SubfieldSpec>;
    }
  | { type: 'object'; description: string; required?: boolean; fields: Record<string, SubfieldSpec> };

/** A field inside an object or an array element: a scalar, or an array of scalars (flattened by the filter). */
export type SubfieldSpec = ScalarType | { array: ScalarType };

export type DatasetFields = Record<string, FieldSpec>;

export interface MetadataField {
  type: string;
  active: boolean;
  required: boolean;
  description: string;
}

/** The `fields` object of `GET /datasets/{id}/metadata`, in the dataset's field order. */
export function metadataFields(fields: DatasetFields): Record<string, MetadataField> {
  const out: Record<string, MetadataField> = {};
  for (const [name, spec] of Object.entries(fields))
    out[name] = { type: spec.type, active: true, required: spec.required === true, description: spec.description };
  return out;
}
