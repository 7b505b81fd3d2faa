performance.getEntriesByType("resource").map(e => e.name).filter(u => u.includes("/v2/page/link"))
