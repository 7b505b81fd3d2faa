({loc: adlink.config.loc, lang: adlink.config.lang})
