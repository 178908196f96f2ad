// The registry of dataset formats (docs/style.md R5): each reader registers a factory under its DataConfig name.
// Internal to datasets/: callers use OpenDataset() and DatasetNames() from dataset.h.
#pragma once

#include <memory>

#include "datasets/dataset.h"
#include "engine/base/registry.h"

namespace geomx::data {

// Factories receive a config whose `path` is already resolved (never "auto" for formats with well-known
// locations) and return both splits, or a Status as documented on OpenDataset().
using DatasetRegistry = Registry<DatasetSplits, const DataConfig&>;

// Each reader file defines one of these (empty) so that OpenDataset() can reference it: static libraries drop
// object files nothing refers to, and their registrations with them (engine/base/registry.h).
void LinkIdxDatasets();
void LinkCifar10Dataset();
void LinkCsvDataset();
void LinkLibsvmDataset();
void LinkImageFolderDataset();
void LinkSyntheticDataset();

}  // namespace geomx::data
