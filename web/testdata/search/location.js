location.search
