/* Written by hand, as `npx convex codegen` would write it: the data model of ../schema.ts. */
import type { DataModelFromSchemaDefinition, DocumentByName, SystemTableNames, TableNamesInDataModel } from "convex/server";
import type { GenericId } from "convex/values";
import type schema from "../schema.js";

/** The component's data model: its `rateLimits` table. */
export type DataModel = DataModelFromSchemaDefinition<typeof schema>;
/** The names of its tables. */
export type TableNames = TableNamesInDataModel<DataModel>;
/** A document of one of its tables. */
export type Doc<TableName extends TableNames> = DocumentByName<DataModel, TableName>;
/** The id of a document of one of its tables. */
export type Id<TableName extends TableNames | SystemTableNames> = GenericId<TableName>;
